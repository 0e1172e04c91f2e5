// SPDX-License-Identifier: BSD-3-Clause
// RedLock.net's factory (RedLockNet.SERedis.RedLockFactory) over the C
// library's client: one connection per node, shared by every lock it makes.
using System;
using System.Collections.Generic;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;
using RedLockNet.Native;
using RedLockNet.SERedis.Configuration;

namespace RedLockNet.SERedis
{
    /// <summary>What RedLock.net configures elsewhere, and what this library adds.</summary>
    public sealed class RedLockFactoryOptions
    {
        /// <summary>Every acquisition mints a fencing token (IRedLock.FencingToken).</summary>
        public bool Fencing { get; set; }
        /// <summary>The prefix of the nodes' keys; null for the C library's default.</summary>
        public string KeyPrefix { get; set; }
        /// <summary>How long auto-extension may keep a lock in all; null for the C library's
        /// default (one hour).</summary>
        public TimeSpan? MaxHold { get; set; }
        /// <summary>PEM file of the CAs that rediss:// nodes' certificates must chain to.</summary>
        public string TlsCaFile { get; set; }
        /// <summary>Accepts any server certificate: tests only.</summary>
        public bool TlsInsecureSkipVerify { get; set; }
    }

    public sealed class RedLockFactory : IDistributedLockFactory, IDisposable
    {
        readonly Redlock client;
        readonly RedLockFactoryOptions options;

        static RedLockFactory()
        {
            // Under Mono, the package's native library before the first P/Invoke (NativeLoader.cs).
            GC.KeepAlive(NativeLoader.Loaded);
        }

        RedLockFactory(string[] urls, RedLockFactoryOptions options)
        {
            this.options = options ?? new RedLockFactoryOptions();
            using (var o = new Options())
            {
                if (this.options.Fencing)
                    o.setFencing(true);
                if (this.options.KeyPrefix != null)
                    o.setKeyPrefix(this.options.KeyPrefix);
                if (this.options.TlsCaFile != null)
                    o.setTlsCaFile(this.options.TlsCaFile);
                if (this.options.TlsInsecureSkipVerify)
                    o.setTlsInsecureSkipVerify(true);
                client = new Redlock(urls, (uint)urls.Length, o);
            }
        }

        /// <summary>As RedLock.net's Create(endPoints): a malformed endpoint raises
        /// RedLockArgumentException (REDLOCK_EINVAL) with the C library's reason.</summary>
        public static RedLockFactory Create(IList<RedLockEndPoint> endPoints, RedLockFactoryOptions options = null)
        {
            if (endPoints == null)
                throw new RedLockArgumentException("no endpoints");
            return new RedLockFactory(endPoints.Select(e => e == null ? null : e.ToUrl()).ToArray(), options);
        }

        /// <summary>Nodes as URLs: redis://[user:password@]host[:port][/db], rediss://... (docs/c-api.md).</summary>
        public static RedLockFactory Create(IEnumerable<string> urls, RedLockFactoryOptions options = null)
        {
            if (urls == null)
                throw new RedLockArgumentException("no endpoints");
            return new RedLockFactory(urls.ToArray(), options);
        }

        /// <summary>The nodes' URLs, passwords masked.</summary>
        public IReadOnlyList<string> NodeUrls
        {
            get
            {
                var list = new List<string>();
                uint n = client.nodeCount();
                for (uint i = 0; i < n; i++)
                    list.Add(client.nodeUrl(i));
                return list;
            }
        }

        /// <summary>One attempt, as RedLock.net's CreateLock(resource, expiry).</summary>
        public IRedLock CreateLock(string resource, TimeSpan expiryTime)
        {
            return Sync(LockKind.Mutex, resource, expiryTime, null, null, null);
        }

        /// <summary>Retries every retryTime until waitTime has passed; cancellationToken ends the
        /// wait (OperationCanceledException) after at most the round in flight.</summary>
        public IRedLock CreateLock(string resource, TimeSpan expiryTime, TimeSpan waitTime, TimeSpan retryTime,
                                   CancellationToken? cancellationToken = null)
        {
            return Sync(LockKind.Mutex, resource, expiryTime, waitTime, retryTime, cancellationToken);
        }

        public Task<IRedLock> CreateLockAsync(string resource, TimeSpan expiryTime)
        {
            return RedLock.Open(this, resource, expiryTime, null, null).AcquireAsync(null);
        }

        /// <summary>The C library's asynchronous acquire: no thread waits; the task completes
        /// from the library's I/O thread (continuations run on the thread pool).</summary>
        public Task<IRedLock> CreateLockAsync(string resource, TimeSpan expiryTime, TimeSpan waitTime,
                                              TimeSpan retryTime, CancellationToken? cancellationToken = null)
        {
            return RedLock.Open(this, resource, expiryTime, waitTime, retryTime).AcquireAsync(cancellationToken);
        }

        // ---- the read-write lock (docs/csharp.md): its two sides are IRedLocks, with every
        // property, auto-extension and Dispose of CreateLock's. Readers share the resource; a
        // writer excludes readers, other writers and CreateLock's mutex of the same name.

        /// <summary>The read side, one attempt.</summary>
        public IRedLock CreateReadLock(string resource, TimeSpan expiryTime)
        {
            return Sync(LockKind.Read, resource, expiryTime, null, null, null);
        }

        /// <summary>The read side, retrying every retryTime until waitTime has passed.</summary>
        public IRedLock CreateReadLock(string resource, TimeSpan expiryTime, TimeSpan waitTime, TimeSpan retryTime,
                                       CancellationToken? cancellationToken = null)
        {
            return Sync(LockKind.Read, resource, expiryTime, waitTime, retryTime, cancellationToken);
        }

        public Task<IRedLock> CreateReadLockAsync(string resource, TimeSpan expiryTime, TimeSpan waitTime,
                                                  TimeSpan retryTime, CancellationToken? cancellationToken = null)
        {
            return RedLock.Open(this, resource, expiryTime, waitTime, retryTime, LockKind.Read)
                          .AcquireAsync(cancellationToken);
        }

        /// <summary>The write side, one attempt.</summary>
        public IRedLock CreateWriteLock(string resource, TimeSpan expiryTime)
        {
            return Sync(LockKind.Write, resource, expiryTime, null, null, null);
        }

        /// <summary>The write side, retrying every retryTime until waitTime has passed.</summary>
        public IRedLock CreateWriteLock(string resource, TimeSpan expiryTime, TimeSpan waitTime, TimeSpan retryTime,
                                        CancellationToken? cancellationToken = null)
        {
            return Sync(LockKind.Write, resource, expiryTime, waitTime, retryTime, cancellationToken);
        }

        public Task<IRedLock> CreateWriteLockAsync(string resource, TimeSpan expiryTime, TimeSpan waitTime,
                                                   TimeSpan retryTime, CancellationToken? cancellationToken = null)
        {
            return RedLock.Open(this, resource, expiryTime, waitTime, retryTime, LockKind.Write)
                          .AcquireAsync(cancellationToken);
        }

        // ---- the counting semaphore (docs/csharp.md): at most limit permits of a name are held
        // at once; each IRedLock takes permits of them (all or none), with every property,
        // auto-extension and Dispose of CreateLock's. Every user of a name passes the same limit.

        /// <summary>permits of the semaphore's limit, one attempt.</summary>
        public IRedLock CreateSemaphore(string resource, int limit, TimeSpan expiryTime, int permits = 1)
        {
            return Sync(LockKind.Semaphore, resource, expiryTime, null, null, null, limit, permits);
        }

        /// <summary>permits of the semaphore's limit, retrying every retryTime until waitTime has passed.</summary>
        public IRedLock CreateSemaphore(string resource, int limit, TimeSpan expiryTime, TimeSpan waitTime,
                                        TimeSpan retryTime, CancellationToken? cancellationToken = null,
                                        int permits = 1)
        {
            return Sync(LockKind.Semaphore, resource, expiryTime, waitTime, retryTime, cancellationToken, limit,
                        permits);
        }

        public Task<IRedLock> CreateSemaphoreAsync(string resource, int limit, TimeSpan expiryTime, int permits = 1)
        {
            return RedLock.Open(this, resource, expiryTime, null, null, LockKind.Semaphore, limit, permits)
                          .AcquireAsync(null);
        }

        public Task<IRedLock> CreateSemaphoreAsync(string resource, int limit, TimeSpan expiryTime,
                                                   TimeSpan waitTime, TimeSpan retryTime,
                                                   CancellationToken? cancellationToken = null, int permits = 1)
        {
            return RedLock.Open(this, resource, expiryTime, waitTime, retryTime, LockKind.Semaphore, limit, permits)
                          .AcquireAsync(cancellationToken);
        }

        /// <summary>A campaigner or observer of the leader election called name (no network I/O
        /// until a call): RedLockElection, docs/csharp.md.</summary>
        public RedLockElection CreateElection(string name)
        {
            return new RedLockElection(client.newElection(name), name); // REDLOCK_EINVAL for a bad name
        }

        IRedLock Sync(LockKind kind, string resource, TimeSpan expiry, TimeSpan? wait, TimeSpan? retry,
                      CancellationToken? cancellationToken, int limit = 0, int permits = 0)
        {
            var l = RedLock.Open(this, resource, expiry, wait, retry, kind, limit, permits);
            l.Acquire(cancellationToken);
            return l;
        }

        internal Redlock Client { get { return client; } }
        internal RedLockFactoryOptions Options { get { return options; } }

        /// <summary>Frees the client; locks made by it stay usable until disposed.</summary>
        public void Dispose()
        {
            client.Dispose();
        }
    }
}
