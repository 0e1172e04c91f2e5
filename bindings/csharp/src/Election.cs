// SPDX-License-Identifier: BSD-3-Clause
// Leader election over the C library's redlock_election (docs/csharp.md): campaign,
// proclaim, resign, the leader as a majority reports it, and observing its changes.
// RedLock.net has none; the shape follows the Java binding's Election. Every decision
// is C's; this class keeps the handle alive while a call is in it (Dispose from another
// thread ends the waits under way, then frees it) and maps a cancel to
// OperationCanceledException.
using System;
using System.Threading;
using System.Threading.Tasks;

namespace RedLockNet
{
    /// <summary>The leader of an election as a majority of the nodes report it, or none.
    /// Terms are fencing tokens: they grow from one leader to the next.</summary>
    public sealed class RedLockLeader
    {
        public RedLockLeader(bool present, long term, long revision, string value)
        {
            Present = present;
            Term = term;
            Revision = revision;
            Value = present ? value : null;
        }

        /// <summary>True when a leader holds the election on a majority.</summary>
        public bool Present { get; }
        /// <summary>The leader's term; with no leader, the last term a majority recorded (0: never any).</summary>
        public long Term { get; }
        /// <summary>1 when elected, + 1 per Proclaim; 0 with no leader.</summary>
        public long Revision { get; }
        /// <summary>The leader's value, or null with no leader.</summary>
        public string Value { get; }

        /// <summary>The native line "present term revision value" (redlock.i).</summary>
        internal static RedLockLeader FromLine(string line)
        {
            string[] p = line.Split(new[] { ' ' }, 4);
            return new RedLockLeader(p[0] == "1", (long)ulong.Parse(p[1]), (long)ulong.Parse(p[2]),
                                     p.Length > 3 ? p[3] : "");
        }

        internal string ToLine()
        {
            return (Present ? "1 " : "0 ") + ((ulong)Term).ToString() + " " + ((ulong)Revision).ToString() + " " +
                   (Value ?? "");
        }

        public override string ToString()
        {
            return Present ? "leader " + Value + " (term " + Term + ", revision " + Revision + ")"
                           : "no leader (last term " + Term + ")";
        }
    }

    /// <summary>One campaigner or observer of a leader election (RedLockFactory.CreateElection).
    /// Campaign, Proclaim and Resign are for one thread at a time; Leader, Observe, IsLeader,
    /// Term and Dispose may be called from another. An observer usually has an election object
    /// of its own (no network I/O to make one), disposed to stop it.</summary>
    public sealed class RedLockElection : IDisposable
    {
        const long WaitForever = -2;

        readonly Native.Election native;
        readonly object gate = new object();
        int inside;
        bool closing;

        internal RedLockElection(Native.Election native, string name)
        {
            this.native = native;
            Name = name;
        }

        public string Name { get; }

        /// <summary>Waits (forever when wait is null, one attempt for TimeSpan.Zero) until this
        /// process leads, then writes value with the new term on a majority and keeps the
        /// leadership (expiry) extended in the background until Resign, Dispose or loss. Returns
        /// the term. Not leading when the wait ran out: RedLockException (REDLOCK_ETIMEDOUT, or
        /// REDLOCK_ENOTACQUIRED for one attempt); cancellationToken: OperationCanceledException.</summary>
        public long Campaign(string value, TimeSpan expiry, TimeSpan? wait = null,
                             CancellationToken? cancellationToken = null)
        {
            uint ttl = RedLock.TtlMs(expiry);
            long waitMs = RedLock.WaitMs(wait, WaitForever);
            Call(cancellationToken, () => { native.campaign(value, ttl, waitMs); return 0; });
            return Term;
        }

        /// <summary>Campaign without a thread that waits: the C library's acquire thread waits
        /// (redlock_election_campaign_async), and the task completes with the term once this
        /// process leads. The same outcomes as Campaign's, as the task's: RedLockException when
        /// not leading, OperationCanceledException when cancellationToken fires (within a round),
        /// ObjectDisposedException when disposed meanwhile. One campaign at a time.</summary>
        public Task<long> CampaignAsync(string value, TimeSpan expiry, TimeSpan? wait = null,
                                        CancellationToken cancellationToken = default(CancellationToken))
        {
            uint ttl = RedLock.TtlMs(expiry);
            long waitMs = RedLock.WaitMs(wait, WaitForever);
            Enter(true);
            CancellationToken ct = cancellationToken;
            var result = new TaskCompletionSource<long>(TaskCreationOptions.RunContinuationsAsynchronously);
            var reg = new CancellationTokenRegistration[1];
            Action<int> done = rc =>
            {
                reg[0].Dispose();
                try
                {
                    if (rc == 0)
                        result.TrySetResult(native.term());
                    else if (rc == RedLockErrorCodes.ECANCELED && Closing)
                        result.TrySetException(new ObjectDisposedException("RedLockElection", "disposed while waiting"));
                    else if (rc == RedLockErrorCodes.ECANCELED && ct.IsCancellationRequested)
                        result.TrySetCanceled(ct);
                    else
                        result.TrySetException(RedLockException.FromNative(rc, native.errmsg()));
                }
                finally
                {
                    if (ct.IsCancellationRequested && !Closing)
                        native.cancelReset();   // sticky in C: cleared for the next call
                    Leave();
                }
            };
            long token = Native.NativeCallbacks.AddPending(done);
            if (ct.CanBeCanceled)
                reg[0] = ct.Register(() => native.cancel());   // a cancel before the start still counts
            int started = native.campaignAsync(value, ttl, waitMs, token);
            if (started != 0)
            {
                Native.NativeCallbacks.RemovePending(token);
                done(started);
            }
            return result.Task;   // completed on the binding's event thread; continuations run elsewhere
        }

        /// <summary>The leader changes its value (same term, next revision).</summary>
        public void Proclaim(string value)
        {
            Call(null, () => { native.proclaim(value); return 0; });
        }

        /// <summary>Gives leadership up at once: the next campaigner is woken. Not leading: nothing.</summary>
        public void Resign()
        {
            Call(null, () => { native.resign(); return 0; });
        }

        /// <summary>True while this process leads and its validity has not run out.</summary>
        public bool IsLeader
        {
            get { return Peek(() => native.isLeader(), false); }
        }

        /// <summary>The term of this process's leadership, 0 when not leading.</summary>
        public long Term
        {
            get { return Peek(() => native.term(), 0L); }
        }

        /// <summary>The leader as a majority of the nodes report it: a hint (fence with the term).</summary>
        public RedLockLeader Leader()
        {
            return Call(null, () => RedLockLeader.FromLine(native.leaderLine()));
        }

        /// <summary>Waits up to wait for the first state after last (start from Leader();
        /// null for the current state): the new state, or null when the wait ran out. Never a
        /// term lower than last's. Dispose from another thread ends the wait
        /// (ObjectDisposedException), as does cancellationToken (OperationCanceledException).</summary>
        public RedLockLeader Observe(RedLockLeader last, TimeSpan wait, CancellationToken? cancellationToken = null)
        {
            long waitMs = RedLock.WaitMs(wait, 0);
            string from = last == null ? "" : last.ToLine();
            return Call(cancellationToken, () =>
            {
                string line = native.observeLine(from, waitMs);
                return line == null ? null : RedLockLeader.FromLine(line);
            });
        }

        /// <summary>Ends the waits under way on other threads and, once they have left the
        /// handle, resigns a leadership (as IRedLock's Dispose releases; never throws: a
        /// leadership not resigned expires) and frees it.</summary>
        public void Dispose()
        {
            lock (gate)
            {
                if (closing)
                    return;
                closing = true;
            }
            native.cancel();
            lock (gate)
            {
                while (inside > 0)
                    Monitor.Wait(gate);
            }
            native.cancelReset();
            try
            {
                if (native.isLeader())
                    native.resign();
            }
            catch (RedLockException)
            {
            }
            native.Dispose();
        }

        T Call<T>(CancellationToken? cancellationToken, Func<T> call)
        {
            Enter(true);
            CancellationToken ct = cancellationToken ?? CancellationToken.None;
            try
            {
                // Disposed before Leave, so the callback never runs on a freed handle.
                using (ct.CanBeCanceled ? ct.Register(() => native.cancel()) : default(CancellationTokenRegistration))
                {
                    try
                    {
                        return call();
                    }
                    catch (RedLockException e) when (e.Code == RedLockErrorCodes.ECANCELED)
                    {
                        if (Closing)
                            throw new ObjectDisposedException("RedLockElection", "disposed while waiting");
                        throw new OperationCanceledException("election wait cancelled: " + e.Message, e, ct);
                    }
                }
            }
            finally
            {
                // A cancel is sticky in C: clear it for the next call (not once closing, when
                // it must keep ending the waits of other threads).
                if (ct.IsCancellationRequested && !Closing)
                    native.cancelReset();
                Leave();
            }
        }

        // A read that a disposed election answers with its default instead of throwing.
        T Peek<T>(Func<T> read, T disposed)
        {
            if (!Enter(false))
                return disposed;
            try
            {
                return read();
            }
            finally
            {
                Leave();
            }
        }

        bool Closing
        {
            get { lock (gate) return closing; }
        }

        bool Enter(bool throwIfClosed)
        {
            lock (gate)
            {
                if (closing)
                {
                    if (throwIfClosed)
                        throw new ObjectDisposedException("RedLockElection");
                    return false;
                }
                inside++;
                return true;
            }
        }

        void Leave()
        {
            lock (gate)
            {
                inside--;
                Monitor.PulseAll(gate);
            }
        }
    }
}
