// SPDX-License-Identifier: BSD-3-Clause

// ReportJob.java: the job that must run once per tick, whichever instance's
// scheduler gets there first.
package io.redlock.example;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import net.javacrumbs.shedlock.core.LockAssert;
import net.javacrumbs.shedlock.spring.annotation.SchedulerLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;

@Component
public class ReportJob {
  private static final Logger log = LoggerFactory.getLogger(ReportJob.class);

  /** Every instance's name for itself, in the log and the runs file. */
  @Value("${report.instance:${random.uuid}}")
  String instance;

  /** Where each run appends a line "report TICK INSTANCE" (none: only logged). */
  @Value("${report.runs-file:}")
  String runsFile;

  /** The tick period, in seconds (the cron below fires on its multiples). */
  static final long PERIOD_S = 2;

  // Every instance fires at the same instants; the lock is held at least
  // 1.5 s, so an instance that fires a little late still finds it taken.
  @Scheduled(cron = "*/2 * * * * *")
  @SchedulerLock(name = "report", lockAtLeastFor = "PT1.5S", lockAtMostFor = "PT30S")
  public void report() {
    LockAssert.assertLocked();
    long tick = tickOf(System.currentTimeMillis());
    log.info("report for tick {} by {}", tick, instance);
    record("report " + tick + " " + instance);
  }

  /** The tick an instant belongs to: the nearest multiple of the period (a fire may be a few ms early or late). */
  static long tickOf(long epochMs) {
    long periodMs = PERIOD_S * 1000;
    return (epochMs + periodMs / 2) / periodMs;
  }

  void record(String line) {
    if (runsFile.isEmpty())
      return;
    try {
      // One short write with O_APPEND: lines of concurrent instances do not mix.
      Files.write(Path.of(runsFile), (line + "\n").getBytes(StandardCharsets.UTF_8),
          StandardOpenOption.CREATE, StandardOpenOption.APPEND, StandardOpenOption.WRITE);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }
}
