// SPDX-License-Identifier: BSD-3-Clause

// ReportApplication.java: a Spring Boot application with one scheduled job,
// run by every instance's scheduler and kept to one run per tick across the
// instances by ShedLock's @SchedulerLock over a Redlock.
package io.redlock.example;

import io.redlock.Redlock;
import io.redlock.shedlock.RedlockLockProvider;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.spring.annotation.EnableSchedulerLock;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.scheduling.annotation.EnableScheduling;

@SpringBootApplication
@EnableScheduling
@EnableSchedulerLock(defaultLockAtMostFor = "PT30S")
public class ReportApplication {
  /** The Redlock client over the nodes of redlock.nodes (comma-separated URLs). */
  @Bean(destroyMethod = "close")
  Redlock redlock(@Value("${redlock.nodes}") String nodes) {
    return new Redlock(nodes.split(","));
  }

  /** ShedLock's locks, as Redlocks: keys "shedlock:<name>" on those nodes. */
  @Bean
  LockProvider lockProvider(Redlock redlock) {
    return new RedlockLockProvider(redlock);
  }

  public static void main(String[] args) {
    SpringApplication.run(ReportApplication.class, args);
  }
}
