// SPDX-License-Identifier: BSD-3-Clause
// The exceptions of the binding: each carries the C library's REDLOCK_E* code
// (Code, a negative number as in redlock.h) and its name (CodeName).
using System;

namespace RedLockNet
{
    /// <summary>The REDLOCK_E* codes of redlock.h.</summary>
    public static class RedLockErrorCodes
    {
        public const int EINVAL = -1, ENOMEM = -2, ENOTACQUIRED = -3, ENOQUORUM = -4, EEXPIRED = -5,
            ELOST = -6, ETIMEDOUT = -7, EIO = -8, ESERVER = -9, EAUTH = -10, ETLS = -11, ENOTSUP = -12,
            ECANCELED = -13, ELIMIT = -14, ESTATE = -15, EUNREACHABLE = -16, EPERM = -17, EATRISK = -18,
            EFENCED = -19;

        /// <summary>"REDLOCK_EAUTH" for EAUTH, and so on (the C library's redlock_error_name).</summary>
        public static string Name(int code)
        {
            switch (code)
            {
                case EINVAL: return "REDLOCK_EINVAL";
                case ENOMEM: return "REDLOCK_ENOMEM";
                case ENOTACQUIRED: return "REDLOCK_ENOTACQUIRED";
                case ENOQUORUM: return "REDLOCK_ENOQUORUM";
                case EEXPIRED: return "REDLOCK_EEXPIRED";
                case ELOST: return "REDLOCK_ELOST";
                case ETIMEDOUT: return "REDLOCK_ETIMEDOUT";
                case EIO: return "REDLOCK_EIO";
                case ESERVER: return "REDLOCK_ESERVER";
                case EAUTH: return "REDLOCK_EAUTH";
                case ETLS: return "REDLOCK_ETLS";
                case ENOTSUP: return "REDLOCK_ENOTSUP";
                case ECANCELED: return "REDLOCK_ECANCELED";
                case ELIMIT: return "REDLOCK_ELIMIT";
                case ESTATE: return "REDLOCK_ESTATE";
                case EUNREACHABLE: return "REDLOCK_EUNREACHABLE";
                case EPERM: return "REDLOCK_EPERM";
                case EATRISK: return "REDLOCK_EATRISK";
                case EFENCED: return "REDLOCK_EFENCED";
                default: return "REDLOCK_E(" + code + ")";
            }
        }
    }

    /// <summary>A failure the C library reported: Code is its REDLOCK_E* code.</summary>
    public class RedLockException : Exception
    {
        public int Code { get; }
        public string CodeName { get; }
        public string Detail { get; }

        public RedLockException(int code, string detail)
            : this(code, detail, null)
        {
        }

        public RedLockException(int code, string detail, Exception inner)
            : base(Format(code, detail), inner)
        {
            Code = code;
            CodeName = SafeName(code);
            Detail = detail;
        }

        static string SafeName(int code)
        {
            return RedLockErrorCodes.Name(code);
        }

        static string Format(int code, string detail)
        {
            return SafeName(code) + ": " + detail;
        }

        /// <summary>The exception class for a code: bad input, refused credentials, or the rest.</summary>
        internal static Exception FromNative(int code, string detail)
        {
            switch (code)
            {
                case RedLockErrorCodes.EINVAL: return new RedLockArgumentException(detail);
                case RedLockErrorCodes.EAUTH:
                case RedLockErrorCodes.EPERM:
                case RedLockErrorCodes.ETLS: return new RedLockRefusedException(code, detail);
                case RedLockErrorCodes.EUNREACHABLE:
                case RedLockErrorCodes.ENOQUORUM:
                case RedLockErrorCodes.EIO: return new RedLockUnavailableException(code, detail);
                default: return new RedLockException(code, detail);
            }
        }
    }

    /// <summary>Bad input (REDLOCK_EINVAL): an empty resource, an expiry out of range, a malformed URL.</summary>
    public class RedLockArgumentException : RedLockException
    {
        public RedLockArgumentException(string detail) : base(RedLockErrorCodes.EINVAL, detail) { }
    }

    /// <summary>A node refused the client: a wrong or missing password (REDLOCK_EAUTH), an ACL
    /// without the lock's commands (REDLOCK_EPERM), or a TLS failure (REDLOCK_ETLS). Waiting
    /// does not fix these, so they are not a <see cref="RedLockStatus"/>.</summary>
    public class RedLockRefusedException : RedLockException
    {
        public RedLockRefusedException(int code, string detail) : base(code, detail) { }
    }

    /// <summary>Too few nodes could be reached or answered (REDLOCK_EUNREACHABLE, REDLOCK_ENOQUORUM, REDLOCK_EIO).</summary>
    public class RedLockUnavailableException : RedLockException
    {
        public RedLockUnavailableException(int code, string detail) : base(code, detail) { }
    }
}
