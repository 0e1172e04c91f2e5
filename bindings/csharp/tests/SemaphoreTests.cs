// SPDX-License-Identifier: BSD-3-Clause
// The "semaphore" group of RedlockTests: RedLockFactory.CreateSemaphore(Async) on real nodes.
// 8 threads on two factories under a limit of 3 (never more than 3 hold, and 3 do at once),
// several permits per holder, fencing tokens, a cancelled asynchronous wait, a Dispose that
// lets a waiter in, and bad input (a limit other than the holders' among it).
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;
using RedLockNet;
using RedLockNet.SERedis;

static partial class RedlockTests
{
    static void SemaphoreBoundsHolders()
    {
        const int limit = 3, threads = 8, rounds = 3;
        using (var a = Factory())
        using (var b = Factory())
        {
            string r = Resource("sem");
            int holding = 0, most = 0, acquired = 0, notAcquired = 0;
            var errors = new List<Exception>();
            var workers = Enumerable.Range(0, threads).Select(i => new Thread(() =>
            {
                try
                {
                    var f = i % 2 == 0 ? a : b;
                    for (int round = 0; round < rounds; round++)
                    {
                        using (var l = f.CreateSemaphore(r, limit, TimeSpan.FromSeconds(10), TimeSpan.FromSeconds(60),
                                                         TimeSpan.FromMilliseconds(20)))
                        {
                            if (!l.IsAcquired)
                            {
                                Interlocked.Increment(ref notAcquired);
                                continue;
                            }
                            Interlocked.Increment(ref acquired);
                            // Counted only while held (after the acquire, before the release), so
                            // the count can only be below the true number of holders.
                            int now = Interlocked.Increment(ref holding);
                            int seen;
                            while ((seen = Volatile.Read(ref most)) < now)
                                if (Interlocked.CompareExchange(ref most, now, seen) == seen)
                                    break;
                            // Held until limit holders have been seen together (or 10 s), so that
                            // reaching the limit does not depend on timing.
                            var sw = Stopwatch.StartNew();
                            while (Volatile.Read(ref most) < limit && sw.ElapsedMilliseconds < 10000)
                                Thread.Sleep(5);
                            Thread.Sleep(20);
                            Interlocked.Decrement(ref holding);
                        }
                    }
                }
                catch (Exception e)
                {
                    lock (errors)
                        errors.Add(e);
                }
            })).ToList();
            workers.ForEach(t => t.Start());
            workers.ForEach(t => t.Join());
            Check(errors.Count == 0, "no thread failed: " + string.Join("; ", errors));
            Equal(0, notAcquired, "waits that ran out");
            Equal(threads * rounds, acquired, "acquisitions");
            Check(most <= limit, "never more than " + limit + " at once: " + most);
            Equal(limit, most, "the most holders at once");
            using (var l = a.CreateSemaphore(r, limit, TimeSpan.FromSeconds(5), limit))
                Check(l.IsAcquired, "all " + limit + " permits free after every Dispose");
        }
    }

    static void SemaphorePermits()
    {
        using (var f = Factory(new RedLockFactoryOptions { Fencing = true }))
        using (var g = Factory())
        {
            string r = Resource("sempermits");
            var ttl = TimeSpan.FromSeconds(10);
            using (var three = f.CreateSemaphore(r, 5, ttl, 3))
            {
                Check(three.IsAcquired, "3 of 5 permits");
                Equal(RedLockStatus.Acquired, three.Status, "its status");
                Check(three.InstanceSummary.Acquired >= 3, "a majority: " + three.InstanceSummary);
                Equal(urls.Length, three.NodeResults.Count, "one result per node");
                Check(three.FencingToken >= 1, "a fencing token: " + three.FencingToken);
                long first = three.FencingToken;
                using (var another = g.CreateSemaphore(r, 5, ttl, 3))
                {
                    Check(!another.IsAcquired, "3 more of the 2 left: none taken");
                    Equal(RedLockStatus.Conflicted, another.Status, "its status");
                    Equal(RedLockErrorCodes.ENOTACQUIRED, another.ErrorCode, "its code");
                }
                using (var two = f.CreateSemaphore(r, 5, ttl, 2))
                {
                    Check(two.IsAcquired, "the 2 left");
                    Check(two.FencingToken > first, "tokens increase: " + first + " then " + two.FencingToken);
                    using (var one = g.CreateSemaphore(r, 5, ttl))
                        Equal(RedLockStatus.Conflicted, one.Status, "none left");
                }
                using (var mutex = g.CreateLock(r, ttl))
                    Check(mutex.IsAcquired, "the mutex of the same name is another lock");
            }
            using (var all = g.CreateSemaphoreAsync(r, 5, ttl, 5).Result)
                Check(all.IsAcquired, "all 5 after the Dispose of the holders");
        }
    }

    static void SemaphoreAsyncCancel()
    {
        using (var f = Factory())
        {
            string r = Resource("semcancel");
            using (var holder = f.CreateSemaphore(r, 2, TimeSpan.FromSeconds(30), 2))
            {
                Check(holder.IsAcquired, "the holder takes both permits");
                using (var cts = new CancellationTokenSource())
                {
                    var t = f.CreateSemaphoreAsync(r, 2, TimeSpan.FromSeconds(10), TimeSpan.FromSeconds(20),
                                                   TimeSpan.FromMilliseconds(1000), cts.Token);
                    CancelMidWait(t, cts, 300);
                }
            }
            using (var l = f.CreateSemaphore(r, 2, TimeSpan.FromSeconds(5), 2))
                Check(l.IsAcquired, "both permits free after the holder and the cancelled waiter");
        }
    }

    static void SemaphoreDisposeFreesSlot()
    {
        using (var f = Factory())
        using (var g = Factory())
        {
            string r = Resource("semslot");
            var ttl = TimeSpan.FromSeconds(10);
            var first = f.CreateSemaphore(r, 2, ttl);
            var second = g.CreateSemaphore(r, 2, ttl);
            Check(first.IsAcquired && second.IsAcquired, "two holders under a limit of 2");
            var waiting = g.CreateSemaphoreAsync(r, 2, ttl, TimeSpan.FromSeconds(10), TimeSpan.FromMilliseconds(50));
            Thread.Sleep(300);
            Check(!waiting.IsCompleted, "a third waits while two hold");
            first.Dispose();
            Check(!first.IsAcquired, "released");
            Check(waiting.Wait(5000), "the waiter's wait ended after a Dispose");
            using (var third = waiting.Result)
            {
                Check(third.IsAcquired, "the waiter took the freed permit");
                using (var fourth = f.CreateSemaphore(r, 2, ttl))
                    Equal(RedLockStatus.Conflicted, fourth.Status, "full again");
            }
            Check(second.DisposeAsync().Wait(5000), "DisposeAsync completes");
            using (var both = f.CreateSemaphore(r, 2, ttl, 2))
                Check(both.IsAcquired, "both free after Dispose and DisposeAsync");
        }
    }

    static void SemaphoreBadInput()
    {
        using (var f = Factory())
        {
            string r = Resource("sembad");
            var ttl = TimeSpan.FromSeconds(1);
            var e = Throws<RedLockArgumentException>(() => f.CreateSemaphore(r, 0, ttl), "limit 0");
            Equal(RedLockErrorCodes.EINVAL, e.Code, "limit 0's code");
            Check(e.Message.StartsWith("REDLOCK_EINVAL: ") && e.Message.Contains("limit is 0"),
                  "the message says why: " + e.Message);
            e = Throws<RedLockArgumentException>(() => f.CreateSemaphore(r, 3, ttl, 4), "permits over the limit");
            Check(e.Message.Contains("4 permits"), "the message says why: " + e.Message);
            Throws<RedLockArgumentException>(() => f.CreateSemaphore(r, 3, ttl, 0), "permits 0");
            e = Throws<RedLockArgumentException>(() => f.CreateSemaphore(r, -1, ttl), "a negative limit");
            Check(e.Message.Contains("negative"), "the message says why: " + e.Message);
            Throws<RedLockArgumentException>(() => f.CreateSemaphore(r, 3, ttl, -2), "negative permits");
            e = Throws<RedLockArgumentException>(() => f.CreateSemaphore("", 3, ttl), "an empty name");
            Equal(RedLockErrorCodes.EINVAL, e.Code, "an empty name's code");
            Throws<RedLockArgumentException>(() => f.CreateSemaphore(null, 3, ttl), "a null name");
            Throws<RedLockArgumentException>(() => f.CreateSemaphore(r, 3, TimeSpan.Zero), "a zero expiry");
            Throws<RedLockArgumentException>(() => f.CreateSemaphore(r, 3, ttl, TimeSpan.FromSeconds(-1),
                                                                     TimeSpan.FromMilliseconds(10)), "a negative wait");
            Throws<RedLockArgumentException>(() => f.CreateSemaphoreAsync(r, 0, ttl).Wait(), "async, limit 0");
            Throws<RedLockArgumentException>(() => f.CreateSemaphoreAsync(r, 2, ttl, TimeSpan.FromSeconds(1),
                                                                          TimeSpan.FromMilliseconds(10), null, 3).Wait(),
                                             "async, permits over the limit");
            using (var l = f.CreateSemaphore(r, 1, ttl))
            {
                Check(l.IsAcquired, "nothing was left held by the refusals");
                // Every user of a name passes the same limit: the nodes refuse another one.
                e = Throws<RedLockArgumentException>(() => f.CreateSemaphore(r, 2, ttl), "another limit while held");
                Check(e.Message.Contains("same limit"), "the message says why: " + e.Message);
            }
        }
    }
}
