// SPDX-License-Identifier: BSD-3-Clause
// Cycle.cs: the C# binding's uncontended cycle for bench/run-langs, as RedLock.net users write
// it: using (var l = factory.CreateLock(key, expiry)) { } on a fresh key (one attempt; Dispose
// releases). usage: mono Cycle.exe CYCLES WARMUP PREFIX (nodes from REDLOCK_TEST_NODES);
// prints "RESULT p50_us p99_us n failures".
using System;
using System.Diagnostics;
using RedLockNet.SERedis;

static class Cycle
{
    static int Main(string[] args)
    {
        int cycles = int.Parse(args[0]), warmup = int.Parse(args[1]);
        string prefix = args[2];
        var s = new double[cycles];
        int failures = 0;
        using (var f = RedLockFactory.Create(Environment.GetEnvironmentVariable("REDLOCK_TEST_NODES").Split(',')))
        {
            for (int i = -warmup; i < cycles; i++)
            {
                long t0 = Stopwatch.GetTimestamp();
                bool ok;
                using (var l = f.CreateLock(prefix + "-" + (i + warmup), TimeSpan.FromSeconds(10)))
                    ok = l.IsAcquired;
                long t = Stopwatch.GetTimestamp() - t0;
                if (i >= 0)
                {
                    s[i] = t * 1e6 / Stopwatch.Frequency;
                    failures += ok ? 0 : 1;
                }
            }
        }
        Array.Sort(s);
        Console.WriteLine(string.Format(System.Globalization.CultureInfo.InvariantCulture, "RESULT {0:F1} {1:F1} {2} {3}",
                                        s[cycles / 2], s[cycles * 99 / 100], cycles, failures));
        return 0;
    }
}
