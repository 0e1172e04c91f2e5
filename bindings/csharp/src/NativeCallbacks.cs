// SPDX-License-Identifier: BSD-3-Clause
// The C# side of redlock_csharp.i's event queue: the C library's callbacks
// (on its acquire and auto-extend threads) queue an event with a token; one
// background thread of this class takes them (rl_cs_next_event) and hands
// each to the waiter or lock its token names, through the tables below. No
// C# code runs on the library's threads: Mono 6.8 hangs at exit once a
// foreign thread has called into it.
using System;
using System.Collections.Concurrent;
using System.Runtime.InteropServices;
using System.Threading;

namespace RedLockNet.Native
{
    internal static class NativeCallbacks
    {
        const int Done = 1, Lost = 2, Free = 3;
        const int MessageSize = 512;

        [DllImport("libredlock_csharp", EntryPoint = "rl_cs_next_event")]
        static extern int NextEvent(out long token, out int code, byte[] message, int messageSize);

        static long nextToken;
        static readonly ConcurrentDictionary<long, Action<int>> pending = new ConcurrentDictionary<long, Action<int>>();
        static readonly ConcurrentDictionary<long, Action<int, string>> watchers =
            new ConcurrentDictionary<long, Action<int, string>>();

        static NativeCallbacks()
        {
            GC.KeepAlive(NativeLoader.Loaded);
            // One thread for the process, whatever the number of waiters; a background
            // thread, so that it never keeps the process alive.
            var t = new Thread(Pump) { IsBackground = true, Name = "redlock events" };
            t.Start();
        }

        /// <summary>A token for one asynchronous call; done runs once, on the binding's event
        /// thread (so it must only hand the outcome over).</summary>
        internal static long AddPending(Action<int> done)
        {
            long token = Interlocked.Increment(ref nextToken);
            pending[token] = done;
            return token;
        }

        /// <summary>For a call that failed at once: its done will never come.</summary>
        internal static void RemovePending(long token)
        {
            Action<int> ignored;
            pending.TryRemove(token, out ignored);
        }

        /// <summary>A token for one auto-extension's lost notices; dropped when the C library
        /// says no notice can follow.</summary>
        internal static long AddWatcher(Action<int, string> lost)
        {
            long token = Interlocked.Increment(ref nextToken);
            watchers[token] = lost;
            return token;
        }

        internal static void RemoveWatcher(long token)
        {
            Action<int, string> ignored;
            watchers.TryRemove(token, out ignored);
        }

        static void Pump()
        {
            byte[] message = new byte[MessageSize];
            for (;;)
            {
                long token;
                int code;
                int kind = NextEvent(out token, out code, message, MessageSize);
                if (kind < 0)
                    return; // no pipe (out of descriptors): asynchronous calls cannot complete
                try
                {
                    switch (kind)
                    {
                        case Done:
                            Action<int> done;
                            if (pending.TryRemove(token, out done))
                                done(code);
                            break;
                        case Lost:
                            Action<int, string> lost;
                            if (watchers.TryGetValue(token, out lost))
                                lost(code, Utf8(message));
                            break;
                        case Free:
                            RemoveWatcher(token);
                            break;
                    }
                }
                catch (Exception)
                {
                    // A handler's failure must not stop the events of every other lock.
                }
            }
        }

        static string Utf8(byte[] buf)
        {
            int n = Array.IndexOf(buf, (byte)0);
            return System.Text.Encoding.UTF8.GetString(buf, 0, n < 0 ? buf.Length : n);
        }
    }
}
