// SPDX-License-Identifier: BSD-3-Clause

// TwoInstancesApp.java: the application as the test runs it, with an
// unlocked job beside the locked one, recorded in the same runs file, that
// shows each instance's scheduler firing at every tick.
package io.redlock.example;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.scheduling.annotation.Scheduled;

public class TwoInstancesApp {
  public static void main(String[] args) {
    SpringApplication.run(new Class<?>[] {ReportApplication.class, Heartbeat.class}, args);
  }

  @Configuration
  static class Heartbeat {
    @Bean
    HeartbeatJob heartbeatJob() {
      return new HeartbeatJob();
    }
  }

  static class HeartbeatJob {
    @Value("${report.instance}")
    String instance;

    @Value("${report.runs-file}")
    String runsFile;

    @Scheduled(cron = "*/2 * * * * *")
    public void beat() {
      ReportJob w = new ReportJob();
      w.runsFile = runsFile;
      w.record("heartbeat " + ReportJob.tickOf(System.currentTimeMillis()) + " " + instance);
    }
  }
}
