// SPDX-License-Identifier: BSD-3-Clause

// TwoInstancesTest.java: two instances of the application, as two JVMs, run
// the same @Scheduled job against the same nodes of tests/harness/nodes.py;
// the runs file must show exactly one run of the locked job per tick, while
// an unlocked job beside it runs on both (so both schedulers were firing).
package io.redlock.example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TwoInstancesTest {
  /** Ticks that both instances must see after both have started. */
  static final int TICKS = 5;

  @TempDir
  Path dir;

  @Test
  void theLockedJobRunsOncePerTick() throws Exception {
    String nodes = System.getenv("REDLOCK_TEST_NODES");
    if (nodes == null || nodes.isEmpty())
      fail("REDLOCK_TEST_NODES is not set: run under tests/harness/nodes.py exec (make test-java-integ)");
    Path runs = dir.resolve("runs.txt");
    Files.createFile(runs);

    List<Process> instances = new ArrayList<>();
    try {
      for (String name : new String[] {"a", "b"})
        instances.add(start(name, nodes, runs));
      // Until each instance's unlocked job has run TICKS times: both are up and
      // firing. The bound only stops a hung instance from hanging the build.
      long giveUp = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
      while (count(runs, "heartbeat", "a") < TICKS || count(runs, "heartbeat", "b") < TICKS) {
        for (Process p : instances)
          if (!p.isAlive())
            fail("an instance exited with " + p.exitValue() + ": " + logs());
        if (System.nanoTime() > giveUp)
          fail("the instances did not fire " + TICKS + " times each in 5 minutes: " + logs());
        Thread.sleep(200);
      }
    } finally {
      for (Process p : instances)
        p.destroy();
      for (Process p : instances)
        if (!p.waitFor(30, TimeUnit.SECONDS))
          p.destroyForcibly();
    }

    // Only ticks that both instances fired: from the first tick both beat at on.
    Map<Long, List<String>> report = new TreeMap<>();
    Map<Long, List<String>> heartbeat = new TreeMap<>();
    for (String line : Files.readAllLines(runs)) {
      String[] f = line.split(" ");
      (f[0].equals("report") ? report : heartbeat).computeIfAbsent(Long.parseLong(f[1]), k -> new ArrayList<>()).add(f[2]);
    }
    long first = Long.MAX_VALUE, last = Long.MIN_VALUE;
    for (Map.Entry<Long, List<String>> e : heartbeat.entrySet())
      if (e.getValue().contains("a") && e.getValue().contains("b")) {
        first = Math.min(first, e.getKey());
        last = Math.max(last, e.getKey());
      }
    System.out.println("heartbeats per tick: " + heartbeat);
    System.out.println("report runs per tick: " + report);
    int checked = 0;
    for (long tick = first; tick <= last; tick++) {
      List<String> hb = heartbeat.getOrDefault(tick, List.of());
      if (!(hb.contains("a") && hb.contains("b")))
        continue; // a tick one scheduler skipped (a GC pause, a loaded machine): nothing to compare
      assertEquals(2, hb.size(), "the unlocked job runs once per instance in tick " + tick);
      assertEquals(1, report.getOrDefault(tick, List.of()).size(),
          "runs of the locked job in tick " + tick + ": " + report.get(tick));
      checked++;
    }
    for (Map.Entry<Long, List<String>> e : report.entrySet())
      assertEquals(1, e.getValue().size(), "runs of the locked job in tick " + e.getKey() + ": " + e.getValue());
    assertTrue(checked >= TICKS - 1, "ticks both instances fired: " + checked);
    System.out.println("ticks checked: " + checked + ", one report run each");
  }

  private Process start(String name, String nodes, Path runs) throws Exception {
    List<String> cmd = List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-cp", System.getProperty("java.class.path"),
        "-Xshare:auto", "-XX:TieredStopAtLevel=1",
        TwoInstancesApp.class.getName(),
        "--redlock.nodes=" + nodes,
        "--report.instance=" + name,
        "--report.runs-file=" + runs);
    ProcessBuilder pb = new ProcessBuilder(cmd);
    pb.redirectErrorStream(true);
    pb.redirectOutput(new File(dir.toFile(), name + ".log"));
    return pb.start();
  }

  private String logs() throws Exception {
    StringBuilder b = new StringBuilder();
    for (String name : new String[] {"a", "b"}) {
      Path log = dir.resolve(name + ".log");
      if (Files.exists(log))
        b.append("\n--- instance ").append(name).append(":\n").append(Files.readString(log));
    }
    return b.toString();
  }

  private static int count(Path runs, String job, String instance) throws Exception {
    int n = 0;
    for (String line : Files.readAllLines(runs))
      if (line.startsWith(job + " ") && line.endsWith(" " + instance))
        n++;
    return n;
  }
}
