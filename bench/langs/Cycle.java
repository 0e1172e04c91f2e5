// SPDX-License-Identifier: BSD-3-Clause
// Cycle.java: the Java binding's uncontended cycle for bench/run-langs, as its users write it:
// try (Lock l = client.tryAcquire(key, ttl)) { l.release(); } on a fresh key.
// usage: java -cp redlock-java.jar Cycle.java CYCLES WARMUP PREFIX (nodes from
// REDLOCK_TEST_NODES); prints "RESULT p50_us p99_us n failures".
import io.redlock.Lock;
import io.redlock.Redlock;
import io.redlock.RedlockException;
import java.util.Arrays;

public class Cycle {
  public static void main(String[] args) {
    int cycles = Integer.parseInt(args[0]), warmup = Integer.parseInt(args[1]);
    String prefix = args[2];
    long[] s = new long[cycles];
    int failures = 0;
    try (Redlock client = new Redlock(System.getenv("REDLOCK_TEST_NODES").split(","))) {
      for (int i = -warmup; i < cycles; i++) {
        long t0 = System.nanoTime();
        boolean ok = true;
        try (Lock l = client.tryAcquire(prefix + "-" + (i + warmup), 10_000)) {
          l.release();
        } catch (RedlockException e) {
          ok = false;
        }
        long t = System.nanoTime() - t0;
        if (i >= 0) {
          s[i] = t;
          failures += ok ? 0 : 1;
        }
      }
    }
    Arrays.sort(s);
    System.out.printf("RESULT %.1f %.1f %d %d%n", s[cycles / 2] / 1000.0, s[cycles * 99 / 100] / 1000.0, cycles,
                      failures);
  }
}
