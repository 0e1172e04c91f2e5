// SPDX-License-Identifier: BSD-3-Clause
// RedLock.net's public types (namespace RedLockNet): IRedLock, RedLockStatus,
// RedLockInstanceSummary, IDistributedLockFactory; plus this library's
// per-node report and lost-lock event arguments.
using System;
using System.Collections.Generic;
using System.Threading;
using System.Threading.Tasks;

namespace RedLockNet
{
    /// <summary>The outcome of an acquisition, as RedLock.net's.</summary>
    public enum RedLockStatus
    {
        /// <summary>Not acquired yet, released, or lost.</summary>
        Unlocked,
        Acquired,
        /// <summary>Too few nodes answered to decide (no majority granted or refused).</summary>
        NoQuorum,
        /// <summary>Another owner holds the lock.</summary>
        Conflicted,
        /// <summary>Granted by a majority, but the validity ran out before the round ended.</summary>
        Expired,
    }

    /// <summary>How many nodes granted, refused (held by another owner) or failed, in the last round.</summary>
    public struct RedLockInstanceSummary
    {
        public RedLockInstanceSummary(int acquired, int conflicted, int error)
        {
            Acquired = acquired;
            Conflicted = conflicted;
            Error = error;
        }

        public int Acquired { get; }
        public int Conflicted { get; }
        public int Error { get; }

        public override string ToString()
        {
            return "Acquired: " + Acquired + ", Conflicted: " + Conflicted + ", Error: " + Error;
        }
    }

    /// <summary>What one node did in the lock's last round (the C library's redlock_lock_node_result).</summary>
    public sealed class RedLockNodeResult
    {
        internal RedLockNodeResult(string url, RedLockNodeOutcome outcome, int code, string message)
        {
            Url = url;
            Outcome = outcome;
            Code = code;
            Message = message;
        }

        /// <summary>The node's URL, its password masked.</summary>
        public string Url { get; }
        public RedLockNodeOutcome Outcome { get; }
        /// <summary>A REDLOCK_E* code for an error, else 0.</summary>
        public int Code { get; }
        public string Message { get; }

        public override string ToString()
        {
            return Url + ": " + Outcome + (Message.Length > 0 ? " (" + Message + ")" : "");
        }
    }

    /// <summary>The C library's redlock_node_outcome.</summary>
    public enum RedLockNodeOutcome
    {
        None = 0, Ok = 1, Refused = 2, Error = 3, Timeout = 4, Down = 5, NotWaited = 6, Quarantined = 7,
    }

    /// <summary>Why an auto-extended lock was lost (the LockLost event).</summary>
    public sealed class RedLockLostEventArgs : EventArgs
    {
        internal RedLockLostEventArgs(int code, string message)
        {
            Code = code;
            Message = message;
        }

        /// <summary>REDLOCK_ELOST, REDLOCK_EEXPIRED or REDLOCK_ELIMIT.</summary>
        public int Code { get; }
        public string Message { get; }
    }

    /// <summary>A lock from <c>RedLockFactory.CreateLock</c>: held while IsAcquired, kept alive
    /// by auto-extension, released by Dispose.</summary>
    public interface IRedLock : IDisposable
    {
        string Resource { get; }
        /// <summary>This handle's identifier (not the value stored in the nodes' key: the C
        /// library does not expose that).</summary>
        string LockId { get; }
        /// <summary>True while the lock is held: acquired, not lost, not released.</summary>
        bool IsAcquired { get; }
        RedLockStatus Status { get; }
        RedLockInstanceSummary InstanceSummary { get; }
        /// <summary>How many times this acquisition was extended, the auto-extension's
        /// extensions included (the C library's redlock_lock_extensions).</summary>
        int ExtendCount { get; }

        /// <summary>The fencing token of this acquisition (RedLockFactoryOptions.Fencing), else 0.</summary>
        long FencingToken { get; }
        /// <summary>The REDLOCK_E* code of a failed acquisition (0 when acquired) and its detail.</summary>
        int ErrorCode { get; }
        string ErrorMessage { get; }
        /// <summary>Each node's part in the last round.</summary>
        IReadOnlyList<RedLockNodeResult> NodeResults { get; }
        /// <summary>Raised (on a thread-pool thread) when auto-extension lost the lock.</summary>
        event EventHandler<RedLockLostEventArgs> LockLost;

        /// <summary>Releases without blocking the caller (the C library's asynchronous release).</summary>
        Task DisposeAsync();
    }

    /// <summary>RedLock.net's factory interface.</summary>
    public interface IDistributedLockFactory
    {
        IRedLock CreateLock(string resource, TimeSpan expiryTime);
        IRedLock CreateLock(string resource, TimeSpan expiryTime, TimeSpan waitTime, TimeSpan retryTime,
                            CancellationToken? cancellationToken = null);
        Task<IRedLock> CreateLockAsync(string resource, TimeSpan expiryTime);
        Task<IRedLock> CreateLockAsync(string resource, TimeSpan expiryTime, TimeSpan waitTime, TimeSpan retryTime,
                                       CancellationToken? cancellationToken = null);
    }
}
