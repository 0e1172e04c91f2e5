// SPDX-License-Identifier: BSD-3-Clause
// IRedLock over one C lock handle. The C library decides everything (quorum,
// validity, retries, extension); this class maps its outcome to RedLock.net's
// status, and keeps the handle's lifetime: the handle is freed by Dispose,
// never while an asynchronous call on it is pending.
using System;
using System.Collections.Generic;
using System.Threading;
using System.Threading.Tasks;
using RedLockNet.Native;
using RedLockNet.SERedis;

namespace RedLockNet
{
    /// <summary>What a RedLock's handle is: the mutex, a side of the read-write lock of its name,
    /// or permits of the counting semaphore of its name.</summary>
    internal enum LockKind { Mutex, Read, Write, Semaphore }

    internal sealed class RedLock : IRedLock
    {
        const long WaitNone = 0;
        static long nextId;

        readonly RedLockFactory factory;
        readonly Lock native;
        readonly uint ttlMs;
        readonly long waitMs;
        readonly object gate = new object();
        volatile RedLockStatus status = RedLockStatus.Unlocked;
        volatile bool lost;
        bool disposed;
        long watcherToken;
        RedLockInstanceSummary summary;
        List<RedLockNodeResult> nodeResults = new List<RedLockNodeResult>();
        int errorCode;
        string errorMessage = "";
        long fencingToken;

        public event EventHandler<RedLockLostEventArgs> LockLost;

        RedLock(RedLockFactory factory, Lock native, string resource, uint ttlMs, long waitMs)
        {
            this.factory = factory;
            this.native = native;
            this.ttlMs = ttlMs;
            this.waitMs = waitMs;
            Resource = resource;
            LockId = resource + "#" + Interlocked.Increment(ref nextId).ToString() + "@" + Guid.NewGuid().ToString("N");
        }

        /// <summary>An expiry in ms; out of 1 ms to uint's range raises (the C library refuses over a day).</summary>
        internal static uint TtlMs(TimeSpan expiry)
        {
            double ttl = expiry.TotalMilliseconds;
            if (ttl < 1 || ttl > uint.MaxValue)
                throw new RedLockArgumentException("expiry " + expiry + " is out of range (1 ms to 1 day)");
            return (uint)ttl;
        }

        /// <summary>A wait in ms (0: one attempt), ifNull without one; negative raises (the C
        /// library refuses over 7 days).</summary>
        internal static long WaitMs(TimeSpan? wait, long ifNull)
        {
            if (!wait.HasValue)
                return ifNull;
            if (wait.Value < TimeSpan.Zero)
                throw new RedLockArgumentException("wait time " + wait.Value + " is negative");
            return (long)Math.Ceiling(wait.Value.TotalMilliseconds);
        }

        /// <summary>The handle, with the wait and retry interval; bad input raises here, before any I/O.</summary>
        internal static RedLock Open(RedLockFactory factory, string resource, TimeSpan expiry, TimeSpan? wait,
                                     TimeSpan? retry, LockKind kind = LockKind.Mutex, int limit = 0, int permits = 0)
        {
            uint ttl = TtlMs(expiry);
            long waitMs = WaitMs(wait, WaitNone);
            if (kind == LockKind.Semaphore && (limit < 0 || permits < 0))
                throw new RedLockArgumentException("the semaphore's limit (" + limit + ") and permits (" + permits +
                                                   ") must not be negative");
            // REDLOCK_EINVAL for a null or empty resource, and for a semaphore's limit of 0 or
            // permits out of 1 to the limit, with the C library's reason.
            Lock l = kind == LockKind.Read ? factory.Client.newReadLock(resource)
                   : kind == LockKind.Write ? factory.Client.newWriteLock(resource)
                   : kind == LockKind.Semaphore ? factory.Client.newSemaphore(resource, (uint)limit, (uint)permits)
                   : factory.Client.newLock(resource);
            try
            {
                if (retry.HasValue && waitMs > 0)
                {
                    double r = retry.Value.TotalMilliseconds;
                    if (r < 0 || r > uint.MaxValue)
                        throw new RedLockArgumentException("retry time " + retry.Value + " is out of range");
                    using (LockOptions o = l.getOptions())
                    {
                        // RedLock.net retries every retryTime; the C library adds up to a tenth
                        // of jitter so that waiters do not retry in step.
                        o.retryDelayMs = (uint)r;
                        o.retryJitterMs = (uint)(r / 10);
                        l.setOptions(o);
                    }
                }
                return new RedLock(factory, l, resource, ttl, waitMs);
            }
            catch
            {
                l.Dispose();
                throw;
            }
        }

        internal void Acquire(CancellationToken? cancellationToken)
        {
            CancellationToken ct = cancellationToken ?? CancellationToken.None;
            int rc;
            using (ct.CanBeCanceled ? ct.Register(() => native.cancel()) : default(CancellationTokenRegistration))
            {
                try
                {
                    native.acquire(ttlMs, waitMs);
                    rc = 0;
                }
                catch (RedLockException e)
                {
                    rc = e.Code;
                }
            }
            Finish(rc, ct);
        }

        internal Task<IRedLock> AcquireAsync(CancellationToken? cancellationToken)
        {
            CancellationToken ct = cancellationToken ?? CancellationToken.None;
            // Completed on the binding's event thread, which only reads the outcome from
            // the handle (no I/O); the caller's continuations run on the thread pool.
            var result = new TaskCompletionSource<IRedLock>(TaskCreationOptions.RunContinuationsAsynchronously);
            CancellationTokenRegistration reg = default(CancellationTokenRegistration);
            Action<int> done = rc =>
            {
                reg.Dispose();
                try
                {
                    Finish(rc, ct);
                    result.TrySetResult(this);
                }
                catch (OperationCanceledException)
                {
                    result.TrySetCanceled(ct);
                }
                catch (Exception e)
                {
                    result.TrySetException(e);
                }
            };
            // The table holds this object (and so the handle) until done has run.
            long token = NativeCallbacks.AddPending(done);
            if (ct.CanBeCanceled)
                reg = ct.Register(() => native.cancel()); // sticky: a cancel before the start still counts
            int started = native.acquireAsync(ttlMs, waitMs, token);
            if (started != 0)
            {
                NativeCallbacks.RemovePending(token);
                done(started);
            }
            return result.Task;
        }

        /// <summary>Records the outcome, starts auto-extension when held, and raises what is not a status.</summary>
        void Finish(int rc, CancellationToken ct)
        {
            ReadReport();
            errorCode = rc;
            errorMessage = rc == 0 ? "" : native.errmsg();
            switch (rc)
            {
                case 0:
                    fencingToken = native.fencingToken();
                    StartAutoExtend();
                    status = RedLockStatus.Acquired;
                    return;
                case RedLockErrorCodes.ENOTACQUIRED:
                    status = RedLockStatus.Conflicted;
                    return;
                case RedLockErrorCodes.ETIMEDOUT:
                    status = summary.Conflicted > 0 ? RedLockStatus.Conflicted : RedLockStatus.NoQuorum;
                    return;
                case RedLockErrorCodes.EEXPIRED:
                    status = RedLockStatus.Expired;
                    return;
                case RedLockErrorCodes.ENOQUORUM:
                case RedLockErrorCodes.EUNREACHABLE:
                case RedLockErrorCodes.EIO:
                case RedLockErrorCodes.ESERVER:
                    // RedLock.net's answer when too few nodes answer; ErrorCode says why.
                    status = RedLockStatus.NoQuorum;
                    return;
            }
            string detail = errorMessage;
            native.Dispose();
            disposed = true;
            if (rc == RedLockErrorCodes.ECANCELED)
                throw new OperationCanceledException("CreateLock cancelled: " + detail, ct);
            throw RedLockException.FromNative(rc, detail);
        }

        void ReadReport()
        {
            int acquired = 0, conflicted = 0, error = 0;
            var results = new List<RedLockNodeResult>();
            uint n = factory.Client.nodeCount();
            for (uint i = 0; i < n; i++)
            {
                int outcome = native.nodeOutcome(i);
                if (outcome < 0)
                    break;
                switch ((RedLockNodeOutcome)outcome)
                {
                    case RedLockNodeOutcome.Ok: acquired++; break;
                    case RedLockNodeOutcome.Refused: conflicted++; break;
                    case RedLockNodeOutcome.None: case RedLockNodeOutcome.NotWaited: break;
                    default: error++; break;
                }
                results.Add(new RedLockNodeResult(factory.Client.nodeUrl(i), (RedLockNodeOutcome)outcome,
                                                  native.nodeCode(i), native.nodeMessage(i) ?? ""));
            }
            summary = new RedLockInstanceSummary(acquired, conflicted, error);
            nodeResults = results;
        }

        void StartAutoExtend()
        {
            watcherToken = NativeCallbacks.AddWatcher(OnLost);
            uint maxHold = 0;
            if (factory.Options.MaxHold.HasValue)
                maxHold = (uint)Math.Min(uint.MaxValue, Math.Max(1, factory.Options.MaxHold.Value.TotalMilliseconds));
            try
            {
                native.autoExtendNotify(maxHold, watcherToken);
            }
            catch
            {
                NativeCallbacks.RemoveWatcher(watcherToken);
                throw;
            }
        }

        // On the C library's auto-extend thread: record, and hand the event to the thread pool.
        void OnLost(int code, string message)
        {
            if (code == RedLockErrorCodes.EATRISK)
                return;
            lost = true;
            var handler = LockLost;
            if (handler != null)
            {
                var args = new RedLockLostEventArgs(code, message);
                ThreadPool.QueueUserWorkItem(_ => handler(this, args));
            }
        }

        public string Resource { get; }
        public string LockId { get; }

        public bool IsAcquired
        {
            get
            {
                if (status != RedLockStatus.Acquired || lost)
                    return false;
                lock (gate)
                {
                    return !disposed && native.isHeld();
                }
            }
        }

        public RedLockStatus Status
        {
            get
            {
                RedLockStatus s = status;
                return s == RedLockStatus.Acquired && !IsAcquired ? RedLockStatus.Unlocked : s;
            }
        }

        public RedLockInstanceSummary InstanceSummary { get { return summary; } }
        /// <summary>How many times this acquisition was extended, by the auto-extension or
        /// by hand (redlock_lock_extensions); 0 once disposed.</summary>
        public int ExtendCount
        {
            get
            {
                lock (gate)
                {
                    return disposed ? 0 : (int)Math.Min(native.extensions(), int.MaxValue);
                }
            }
        }
        public long FencingToken { get { return fencingToken; } }
        public int ErrorCode { get { return errorCode; } }
        public string ErrorMessage { get { return errorMessage; } }
        public IReadOnlyList<RedLockNodeResult> NodeResults { get { return nodeResults; } }

        /// <summary>Releases (when held) and frees the handle. Never throws: a lock that was
        /// already lost has nothing to release.</summary>
        public void Dispose()
        {
            lock (gate)
            {
                if (disposed)
                    return;
                disposed = true;
                try
                {
                    if (status == RedLockStatus.Acquired)
                        native.release(); // stops auto-extension too
                }
                catch (RedLockException)
                {
                }
                finally
                {
                    native.Dispose();
                }
                status = RedLockStatus.Unlocked;
            }
        }

        /// <summary>The release runs on the C library's I/O thread; the handle is freed after it.</summary>
        public Task DisposeAsync()
        {
            lock (gate)
            {
                if (disposed)
                    return Task.CompletedTask;
                if (status != RedLockStatus.Acquired)
                {
                    disposed = true;
                    native.Dispose();
                    return Task.CompletedTask;
                }
                disposed = true;
                status = RedLockStatus.Unlocked;
            }
            var tcs = new TaskCompletionSource<int>(TaskCreationOptions.RunContinuationsAsynchronously);
            long token = NativeCallbacks.AddPending(rc => tcs.TrySetResult(rc));
            int started = native.releaseAsync(token);
            if (started != 0)
            {
                NativeCallbacks.RemovePending(token);
                tcs.TrySetResult(started);
            }
            return tcs.Task.ContinueWith(t => native.Dispose(), CancellationToken.None,
                                         TaskContinuationOptions.ExecuteSynchronously, TaskScheduler.Default);
        }

        public override string ToString()
        {
            return "RedLock " + Resource + " " + Status + " (" + summary + ")";
        }
    }
}
