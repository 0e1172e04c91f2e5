// SPDX-License-Identifier: BSD-3-Clause
// A node, as RedLock.net's RedLockEndPoint: host and port (or a
// System.Net.EndPoint), password, TLS and database; or a redis:// URL as the
// C library takes it (docs/c-api.md, "Node URLs").
using System;
using System.Globalization;
using System.Net;

namespace RedLockNet.SERedis.Configuration
{
    public sealed class RedLockEndPoint
    {
        public RedLockEndPoint() { }

        public RedLockEndPoint(EndPoint endPoint)
        {
            EndPoint = endPoint;
        }

        /// <summary>DnsEndPoint or IPEndPoint, as in RedLock.net; or set Host and Port.</summary>
        public EndPoint EndPoint { get; set; }
        public string Host { get; set; }
        /// <summary>0 means 6379.</summary>
        public int Port { get; set; }
        /// <summary>An ACL user (AUTH user password); null for AUTH password.</summary>
        public string User { get; set; }
        public string Password { get; set; }
        /// <summary>TLS (rediss://).</summary>
        public bool Ssl { get; set; }
        /// <summary>The database to SELECT; null or 0 for the default.</summary>
        public int? RedisDatabase { get; set; }
        /// <summary>A node URL (redis://, rediss://, unix://, redis-cluster://...) used as is; the
        /// other properties are then ignored.</summary>
        public string Url { get; set; }

        public static implicit operator RedLockEndPoint(EndPoint endPoint)
        {
            return new RedLockEndPoint(endPoint);
        }

        /// <summary>A URL, checked by the C library when the factory is created.</summary>
        public static RedLockEndPoint FromUrl(string url)
        {
            return new RedLockEndPoint { Url = url };
        }

        /// <summary>The URL handed to the C library (with the password, unmasked).</summary>
        public string ToUrl()
        {
            if (Url != null)
                return Url;
            string host = Host;
            int port = Port;
            if (EndPoint is DnsEndPoint dns)
            {
                host = dns.Host;
                port = dns.Port;
            }
            else if (EndPoint is IPEndPoint ip)
            {
                host = ip.Address.ToString();
                port = ip.Port;
            }
            else if (EndPoint != null)
            {
                throw new RedLockArgumentException("unsupported EndPoint type " + EndPoint.GetType().Name);
            }
            if (string.IsNullOrEmpty(host))
                throw new RedLockArgumentException("RedLockEndPoint without a host");
            string url = Ssl ? "rediss://" : "redis://";
            if (!string.IsNullOrEmpty(User) || Password != null)
            {
                // An empty password is passed on for the C library to refuse it.
                url += (User != null ? Uri.EscapeDataString(User) : "") + ":" +
                       Uri.EscapeDataString(Password ?? "") + "@";
            }
            url += host.IndexOf(':') >= 0 && !host.StartsWith("[", StringComparison.Ordinal) ? "[" + host + "]" : host;
            url += ":" + (port == 0 ? 6379 : port).ToString(CultureInfo.InvariantCulture);
            if (RedisDatabase.HasValue && RedisDatabase.Value != 0)
                url += "/" + RedisDatabase.Value.ToString(CultureInfo.InvariantCulture);
            return url;
        }

        public override string ToString()
        {
            if (Url != null)
                return Url;
            string s = EndPoint != null ? EndPoint.ToString() : Host + ":" + (Port == 0 ? 6379 : Port);
            return (Ssl ? "rediss://" : "redis://") + s;
        }
    }
}
