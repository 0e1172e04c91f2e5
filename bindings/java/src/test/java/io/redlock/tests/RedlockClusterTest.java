// SPDX-License-Identifier: BSD-3-Clause

// RedlockClusterTest.java: the Java binding on Redis/Valkey Clusters as
// Redlock nodes (docs/cluster.md), run under tests/harness/rcluster.py exec:
// independent clusters, one redis-cluster:// URL each in REDLOCK_TEST_NODES,
// their master ports in REDLOCK_TEST_CLUSTER_PORTS ("p1 p2 p3,p1 p2 p3,...").
// The URLs go to new Redlock(...) unchanged. A peer's plain SET NX PX (what
// redsync and pottery send) on the same key blocks redlock, and the reverse:
// the lock key keeps its bare name on a cluster node.
package io.redlock.tests;

import io.redlock.*;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

public final class RedlockClusterTest {
  private static int passed;
  private static int failed;

  public static void main(String[] args) throws Exception {
    if (args.length != 1 || !args[0].equals("cluster")) {
      System.err.println("usage: RedlockClusterTest cluster   (under tests/harness/rcluster.py exec)");
      System.exit(2);
    }
    locksOverEveryShard();
    peerInterop();
    System.out.println(passed + " passed, " + failed + " failed");
    System.exit(failed == 0 && passed > 0 ? 0 : 1);
  }

  private static void check(boolean ok, String what) {
    if (ok) {
      passed++;
    } else {
      failed++;
      System.out.println("FAIL: " + what);
      new Throwable("at").printStackTrace(System.out);
    }
  }

  private static String[] urls() {
    String env = System.getenv("REDLOCK_TEST_NODES");
    if (env == null || !env.startsWith("redis-cluster://"))
      throw new IllegalStateException("REDLOCK_TEST_NODES has no cluster URLs: run under tests/harness/rcluster.py exec");
    return env.split(",");
  }

  /** Each cluster's master ports. */
  private static List<Set<Integer>> ports() {
    List<Set<Integer>> out = new ArrayList<>();
    for (String cluster : System.getenv("REDLOCK_TEST_CLUSTER_PORTS").split(",")) {
      Set<Integer> s = new HashSet<>();
      for (String p : cluster.trim().split(" "))
        s.add(Integer.parseInt(p));
      out.add(s);
    }
    return out;
  }

  static void locksOverEveryShard() throws Exception {
    String[] urls = urls();
    List<Set<Integer>> ports = ports();
    Options opts = new Options();
    opts.setFencing(true);
    opts.setNodeTimeoutMs(1_000);
    Set<String> shards = new HashSet<>();
    try (Redlock client = new Redlock(urls, opts); Redlock other = new Redlock(urls, opts)) {
      check(client.nodeCount() == urls.length, "one node per cluster URL");
      for (int k = 0; k < 40; k++) {
        String name = "java-cluster:" + k;
        Lock lock = client.tryAcquire(name, 10_000);
        long first = lock.fencingToken();
        check(first >= 1, name + ": a fencing token");
        for (NodeResult r : lock.nodeResults()) {
          if (r.outcome() != NodeResult.Outcome.OK)
            continue;
          String m = r.message();
          int port = m.startsWith("shard 127.0.0.1:") ? Integer.parseInt(m.substring(16)) : -1;
          check(ports.get(r.index()).contains(port), name + ": node " + r.index() + " names a master of its cluster: " + m);
          shards.add(r.index() + ":" + port);
        }
        try {
          other.tryAcquire(name, 1_000);
          check(false, name + ": a second client acquired a held lock");
        } catch (LockNotAcquiredException e) {
          passed++;
        }
        lock.extend(10_000);
        check(lock.isHeld(), name + ": held after extend");
        lock.release();
        lock.acquire(10_000);
        check(lock.fencingToken() > first, name + ": the token rose: " + lock.fencingToken() + " after " + first);
        lock.release();
      }
    }
    int all = 0;
    for (Set<Integer> s : ports)
      all += s.size();
    check(shards.size() >= all - 2, "the locks reached most of the " + all + " shards: " + shards);
  }

  static void peerInterop() throws Exception {
    String[] urls = urls();
    List<Set<Integer>> ports = ports();
    String name = "java-cluster:peer:" + ProcessHandle.current().pid();
    byte[] rnd = new byte[16];
    new SecureRandom().nextBytes(rnd);
    StringBuilder value = new StringBuilder();
    for (byte b : rnd)
      value.append(String.format("%02x", b));
    try (Redlock client = new Redlock(urls)) {
      // The peer holds the bare key on every cluster (SET NX PX, a random value).
      for (Set<Integer> c : ports)
        check("OK".equals(onCluster(c, "SET", name, value.toString(), "NX", "PX", "10000")), "peer's SET NX PX");
      try {
        client.tryAcquire(name, 5_000);
        check(false, "redlock acquired a lock a peer holds");
      } catch (LockNotAcquiredException e) {
        passed++;
      }
      for (Set<Integer> c : ports)
        check(value.toString().equals(onCluster(c, "GET", name)), "the peer's key is untouched");
      for (Set<Integer> c : ports)
        onCluster(c, "DEL", name);
      // And the reverse: redlock's key refuses the peer's SET NX.
      Lock lock = client.tryAcquire(name, 10_000);
      int refused = 0;
      for (Set<Integer> c : ports)
        refused += onCluster(c, "SET", name, value.toString(), "NX", "PX", "10000") == null ? 1 : 0;
      check(refused >= 2, "the peer's SET NX refused on a majority while redlock holds: " + refused);
      lock.release();
      for (Set<Integer> c : ports)
        check(onCluster(c, "EXISTS", name).equals(0L), "released: the key is gone");
    }
  }

  /** One command to the cluster whose masters are `masters`, following one MOVED. */
  private static Object onCluster(Set<Integer> masters, String... words) throws IOException {
    int port = masters.iterator().next();
    for (int hop = 0; hop < 3; hop++) {
      Object r = command(port, words);
      if (r instanceof String && ((String) r).startsWith("-MOVED ")) {
        String addr = ((String) r).split(" ")[2];
        port = Integer.parseInt(addr.substring(addr.lastIndexOf(':') + 1));
        continue;
      }
      return r;
    }
    throw new IOException("too many redirects for " + String.join(" ", words));
  }

  /** One command on a fresh connection to 127.0.0.1:port; an error reply comes back as "-ERR ...". */
  private static Object command(int port, String... words) throws IOException {
    try (Socket s = new Socket("127.0.0.1", port)) {
      s.setSoTimeout(5_000);
      ByteArrayOutputStream req = new ByteArrayOutputStream();
      req.write(("*" + words.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
      for (String w : words) {
        byte[] b = w.getBytes(StandardCharsets.UTF_8);
        req.write(("$" + b.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
        req.write(b);
        req.write("\r\n".getBytes(StandardCharsets.US_ASCII));
      }
      OutputStream out = s.getOutputStream();
      out.write(req.toByteArray());
      out.flush();
      return readReply(s.getInputStream());
    }
  }

  private static Object readReply(InputStream in) throws IOException {
    String line = readLine(in);
    switch (line.charAt(0)) {
      case '+': return line.substring(1);
      case '-': return line;
      case ':': return Long.parseLong(line.substring(1));
      case '$': {
        int n = Integer.parseInt(line.substring(1));
        if (n < 0)
          return null;
        byte[] b = in.readNBytes(n + 2);
        return new String(b, 0, n, StandardCharsets.UTF_8);
      }
      default: throw new IOException("unexpected reply " + line);
    }
  }

  private static String readLine(InputStream in) throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    int c;
    while ((c = in.read()) != -1) {
      if (c == '\r') {
        in.read();
        break;
      }
      b.write(c);
    }
    return b.toString(StandardCharsets.US_ASCII);
  }
}
