// SPDX-License-Identifier: BSD-3-Clause

// Nodes.java: the Java integration modules' view of the real nodes that
// tests/harness/nodes.py started ($REDLOCK_TEST_NODES), with a minimal RESP
// client to look at keys; one copy, added to each module's test sources.
package io.redlock.testsupport;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

public final class Nodes {
  private Nodes() {}

  /** The node URLs; fails (in CI too) when the tests are not run under the harness. */
  public static String[] urls() {
    String env = System.getenv("REDLOCK_TEST_NODES");
    if (env == null || env.isEmpty())
      throw new IllegalStateException("REDLOCK_TEST_NODES is not set: run these tests under "
          + "tests/harness/nodes.py exec (make test-java-integ)");
    return env.split(",");
  }

  /** One command on node url (redis://host:port); the reply as String, Long, List or null. */
  public static Object cmd(String url, String... args) {
    URI u = URI.create(url);
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress(u.getHost(), u.getPort()), 2000);
      s.setSoTimeout(5000);
      OutputStream out = s.getOutputStream();
      StringBuilder b = new StringBuilder("*").append(args.length).append("\r\n");
      for (String a : args) {
        byte[] bytes = a.getBytes(StandardCharsets.UTF_8);
        b.append('$').append(bytes.length).append("\r\n").append(a).append("\r\n");
      }
      out.write(b.toString().getBytes(StandardCharsets.UTF_8));
      out.flush();
      return read(new BufferedInputStream(s.getInputStream()));
    } catch (IOException e) {
      throw new UncheckedIOException("node " + url + ": " + String.join(" ", args), e);
    }
  }

  private static String line(InputStream in) throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    int c;
    while ((c = in.read()) != '\r') {
      if (c < 0)
        throw new IOException("connection closed");
      b.write(c);
    }
    in.read(); // '\n'
    return b.toString(StandardCharsets.UTF_8);
  }

  private static Object read(InputStream in) throws IOException {
    int type = in.read();
    String l = line(in);
    switch (type) {
      case '+': return l;
      case '-': throw new IOException("error reply: " + l);
      case ':': return Long.parseLong(l);
      case '$': {
        int n = Integer.parseInt(l);
        if (n < 0)
          return null;
        byte[] data = in.readNBytes(n + 2);
        return new String(data, 0, n, StandardCharsets.UTF_8);
      }
      case '*': {
        int n = Integer.parseInt(l);
        if (n < 0)
          return null;
        List<Object> items = new ArrayList<>(n);
        for (int i = 0; i < n; i++)
          items.add(read(in));
        return items;
      }
      default: throw new IOException("bad reply type " + (char) type);
    }
  }

  /** On how many nodes key exists. */
  public static int existsOn(String key) {
    int n = 0;
    for (String url : urls())
      n += ((Long) cmd(url, "EXISTS", key)).intValue();
    return n;
  }

  /** A command to the harness ($REDLOCK_HARNESS_CTL: kill I, restart I...); fails unless it succeeds. */
  public static void ctl(String... args) throws IOException, InterruptedException {
    String prefix = System.getenv("REDLOCK_HARNESS_CTL");
    if (prefix == null)
      throw new IllegalStateException("REDLOCK_HARNESS_CTL is not set: run under tests/harness/nodes.py exec");
    Process p = new ProcessBuilder("sh", "-c", prefix + " " + String.join(" ", args)).inheritIO().start();
    if (p.waitFor() != 0)
      throw new IOException("harness ctl " + String.join(" ", args) + " exited with " + p.exitValue());
  }

  public static void flushAll() {
    for (String url : urls())
      cmd(url, "FLUSHALL");
  }
}
