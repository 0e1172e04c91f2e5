// SPDX-License-Identifier: BSD-3-Clause

// RefusalsTest.java: issue 36, a node that refuses the client is never taken
// for a busy lock. Every primitive (lock, lock with wake-up, read lock, write
// lock, semaphore permit, multi-lock, election campaign), given a 10 s wait,
// must end within 2 s when the refusing nodes alone rule out a quorum: no
// password where one is needed or a wrong one (AuthException, the cause in
// the message), an ACL user without scripting, or nodes whose EVAL and
// EVALSHA are disabled (PermissionDeniedException, REDLOCK_EPERM, naming the command,
// with no lock key left). One refusing node of three does not stop a free
// lock. "java RefusalsTest GROUP" runs one group against the first three
// nodes of $REDLOCK_TEST_NODES (tests/harness/nodes.py exec):
//
//   auth        requirepass on 3 of 3 (no password, a wrong one), a wrong
//               password of an ACL user on 2 of 3, and 1 of 3 of each
//   permission  ACL users denied @scripting, or EVAL and EVALSHA, on 3 of 3
//               and 2 of 3; 1 of 3
//   renamed     three nodes of its own, started with EVAL and EVALSHA
//               disabled (see renamed())
//
// The groups change the nodes' ACL users and requirepass, and put them back.
// PermissionDeniedException is looked up by name, so that this compiles
// before the binding has it; until then the permission groups fail.
package io.redlock.tests;

import io.redlock.*;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

public final class RefusalsTest {
  private static int passed;
  private static int failed;

  static final String PW = "refusals-Pw1";
  static final String OTHER_PW = "refusals-Other2";
  static final long WAIT_MS = 10_000;    // the wait every acquire is given
  static final long PROMPT_MS = 2_000;   // a refusal must end it within this
  static final long TTL_MS = 5_000;
  static final int EPERM = -17;
  static final String NOAUTH_TEXT = "this node needs a password";
  static final Pattern WRONGPASS =
      Pattern.compile("(?i)(password|user)[^;]*refused|refused[^;]*(password|user)|WRONGPASS");
  static final Pattern COMMAND = Pattern.compile("(?i)\\b(evalsha|eval|fcall|fcall_ro)\\b");

  public static void main(String[] args) throws Exception {
    if (args.length != 1) {
      System.err.println("usage: RefusalsTest auth|permission|renamed");
      System.exit(2);
    }
    if (nodes().length < 3) {
      System.err.println("RefusalsTest needs 3 nodes");
      System.exit(2);
    }
    switch (args[0]) {
      case "auth": auth(); break;
      case "permission": permission(); break;
      case "renamed": renamed(); break;
      default:
        System.err.println("unknown group " + args[0]);
        System.exit(2);
    }
    System.out.println(passed + " passed, " + failed + " failed");
    System.exit(failed == 0 && passed > 0 ? 0 : 1);
  }

  // ---------------------------------------------------------------- checks

  private static void check(boolean ok, String what) {
    if (ok) {
      passed++;
    } else {
      failed++;
      System.out.println("FAIL: " + what);
    }
  }

  private static String[] nodes() {
    String env = System.getenv("REDLOCK_TEST_NODES");
    if (env == null || env.isEmpty())
      throw new IllegalStateException("REDLOCK_TEST_NODES is not set: run under tests/harness/nodes.py exec");
    return env.split(",");
  }

  /** Nodes 0-2, each with userinfo put in after the scheme (null: as they are). */
  private static String[] urls(String userinfo) {
    String[] out = new String[3];
    for (int i = 0; i < 3; i++) {
      String u = nodes()[i];
      out[i] = userinfo == null ? u : u.replaceFirst("://", "://" + userinfo + "@");
    }
    return out;
  }

  private static String hostPort(int i) {
    URI u = URI.create(nodes()[i]);
    return u.getHost() + ":" + u.getPort();
  }

  // ------------------------------------------------------ a node, directly
  // One command on a fresh connection to node i, as the default user
  // (AUTH pw first unless pw is null). Returns the reply; an error reply
  // comes back as an IOException.

  private static Object node(int i, String pw, String... words) throws IOException {
    URI u = URI.create(nodes()[i]);
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress(u.getHost(), u.getPort()), 2_000);
      s.setSoTimeout(5_000);
      OutputStream out = s.getOutputStream();
      InputStream in = s.getInputStream();
      if (pw != null) {
        send(out, "AUTH", pw);
        readReply(in);
      }
      send(out, words);
      return readReply(in);
    }
  }

  private static void send(OutputStream out, String... words) throws IOException {
    ByteArrayOutputStream req = new ByteArrayOutputStream();
    req.write(("*" + words.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
    for (String w : words) {
      byte[] b = w.getBytes(StandardCharsets.UTF_8);
      req.write(("$" + b.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
      req.write(b);
      req.write("\r\n".getBytes(StandardCharsets.US_ASCII));
    }
    out.write(req.toByteArray());
    out.flush();
  }

  private static Object readReply(InputStream in) throws IOException {
    String line = readLine(in);
    switch (line.charAt(0)) {
      case '+': return line.substring(1);
      case '-': throw new IOException(line.substring(1));
      case ':': return Long.parseLong(line.substring(1));
      case '$': {
        int n = Integer.parseInt(line.substring(1));
        if (n < 0)
          return null;
        byte[] b = in.readNBytes(n + 2);
        return new String(b, 0, n, StandardCharsets.UTF_8);
      }
      case '*': {
        int n = Integer.parseInt(line.substring(1));
        List<Object> items = new ArrayList<>();
        for (int k = 0; k < n; k++)
          items.add(readReply(in));
        return items;
      }
      default: throw new IOException("bad reply " + line);
    }
  }

  private static String readLine(InputStream in) throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    int c;
    while ((c = in.read()) != -1 && c != '\n')
      if (c != '\r')
        b.write(c);
    if (c == -1 && b.size() == 0)
      throw new IOException("the node closed the connection");
    return b.toString(StandardCharsets.UTF_8);
  }

  /** The keys of res on node i, the library's records aside: fencing counters, and a semaphore's
   *  :limit, which a granting node keeps for two TTLs (docs/algorithm.md). */
  private static List<String> lockKeys(int i, String res) throws IOException {
    List<String> out = new ArrayList<>();
    for (Object k : (List<?>) node(i, null, "KEYS", "*" + res + "*"))
      if (!((String) k).endsWith(":fencing") && !((String) k).endsWith(":limit"))
        out.add((String) k);
    return out;
  }

  /** No key of res on nodes 0-2, waiting up to a second for writes a decided round did not wait for. */
  private static void checkNoLockKeys(String res, String what) throws Exception {
    long end = System.nanoTime() + 1_000_000_000L;
    String left;
    do {
      StringBuilder b = new StringBuilder();
      for (int i = 0; i < 3; i++) {
        List<String> k = lockKeys(i, res);
        if (!k.isEmpty())
          b.append("node ").append(i).append(": ").append(k).append("; ");
      }
      left = b.toString();
      if (left.isEmpty())
        break;
      Thread.sleep(20);
    } while (System.nanoTime() < end);
    check(left.isEmpty(), what + ": lock keys left behind by a refused acquire: " + left);
  }

  private static void requirePass(int... which) throws IOException {
    for (int i : which)
      node(i, null, "CONFIG", "SET", "requirepass", PW);
  }

  private static void clearPass(int... which) throws IOException {
    for (int i : which)
      node(i, PW, "CONFIG", "SET", "requirepass", "");
  }

  /** noscript and noeval are denied scripting on every node, two_noscript on nodes 1 and 2,
   *  one_noscript on node 2; two_wrongpw and one_wrongpw have another password there. */
  private static void makeUsers() throws IOException {
    for (int i = 0; i < 3; i++) {
      setUser(i, "noscript", ">" + PW, "-@scripting");
      setUser(i, "noeval", ">" + PW, "-eval", "-evalsha");
      setUser(i, "two_noscript", ">" + PW, i >= 1 ? "-@scripting" : "+@all");
      setUser(i, "one_noscript", ">" + PW, i == 2 ? "-@scripting" : "+@all");
      setUser(i, "two_wrongpw", ">" + (i >= 1 ? OTHER_PW : PW));
      setUser(i, "one_wrongpw", ">" + (i == 2 ? OTHER_PW : PW));
    }
  }

  private static void setUser(int i, String user, String... rules) throws IOException {
    List<String> w = new ArrayList<>(List.of("ACL", "SETUSER", user, "on", "~*", "&*", "+@all"));
    w.addAll(List.of(rules));
    node(i, null, w.toArray(new String[0]));
  }

  private static void dropUsers() throws IOException {
    for (int i = 0; i < 3; i++)
      node(i, null, "ACL", "DELUSER", "noscript", "noeval", "two_noscript", "one_noscript", "two_wrongpw",
          "one_wrongpw");
  }

  // ------------------------------------------------------------ primitives
  // Each acquires res with a 10 s wait and returns what releases it; a false
  // from a tryLock / tryAcquire is an AssertionError (a refusal must throw).

  interface Release {
    void run() throws Exception;
  }

  interface Prim {
    Release acquire(Redlock c, String res) throws Exception;
  }

  private static void mustHold(boolean ok, String what) {
    if (!ok)
      throw new AssertionError(what + " returned false after its wait instead of throwing");
  }

  static final String[] NAMES = {"lock", "wake", "read", "write", "semaphore", "multi", "campaign"};

  static Prim prim(String name) {
    switch (name) {
      case "lock":
        return (c, res) -> {
          Lock l = c.newLock(res);
          l.acquire(TTL_MS, WAIT_MS);
          return () -> { l.release(); l.close(); };
        };
      case "wake":
        return (c, res) -> {
          LockOptions o = new LockOptions();
          o.setWake(true);
          Lock l = c.newLock(res, o);
          l.acquire(TTL_MS, WAIT_MS);
          return () -> { l.release(); l.close(); };
        };
      case "read":
        return (c, res) -> {
          RedlockReadWriteLock rw = new RedlockReadWriteLock(c, res, TTL_MS);
          mustHold(rw.readLock().tryLock(WAIT_MS, TimeUnit.MILLISECONDS), "readLock().tryLock");
          return () -> rw.readLock().unlock();
        };
      case "write":
        return (c, res) -> {
          RedlockReadWriteLock rw = new RedlockReadWriteLock(c, res, TTL_MS);
          mustHold(rw.writeLock().tryLock(WAIT_MS, TimeUnit.MILLISECONDS), "writeLock().tryLock");
          return () -> rw.writeLock().unlock();
        };
      case "semaphore":
        return (c, res) -> {
          io.redlock.Semaphore s = new io.redlock.Semaphore(c, res, 3, TTL_MS);
          boolean ok;
          try {
            ok = s.tryAcquire(WAIT_MS, TimeUnit.MILLISECONDS);
          } catch (RuntimeException e) {
            s.close();
            throw e;
          }
          if (!ok)
            s.close();
          mustHold(ok, "Semaphore.tryAcquire");
          return () -> { s.release(); s.close(); };
        };
      case "multi":
        return (c, res) -> {
          Lock l = c.newMultiLock(res + ":a", res + ":b");
          l.acquire(TTL_MS, WAIT_MS);
          return () -> { l.release(); l.close(); };
        };
      case "campaign":
        return (c, res) -> {
          Election e = c.newElection(res);
          try {
            e.campaign("candidate", TTL_MS, WAIT_MS);
          } catch (RuntimeException ex) {
            e.close();
            throw ex;
          }
          return () -> { e.resign(); e.close(); };
        };
      default:
        throw new IllegalArgumentException(name);
    }
  }

  private static String newName() {
    return "java-refusals-" + UUID.randomUUID().toString().substring(0, 12);
  }

  /** The resource of the last refused() call, for the key checks after it. */
  private static String lastName = "";

  /**
   * Runs prim against urls; it must throw a RedlockException within 2 s of
   * its 10 s wait, naming one of the refusing nodes. Returns it (or null).
   */
  private static RedlockException refused(String prim, String[] urls, String what, int... refusing) {
    String res = newName();
    lastName = res;
    String label = prim + ", " + what;
    try (Redlock c = new Redlock(urls)) {
      long t0 = System.nanoTime();
      Throwable thrown = null;
      try {
        Release r = prim(prim).acquire(c, res);
        r.run();
      } catch (Throwable t) {
        thrown = t;
      }
      long ms = (System.nanoTime() - t0) / 1_000_000;
      if (thrown == null) {
        check(false, label + ": acquired through refusing nodes");
        return null;
      }
      if (!(thrown instanceof RedlockException)) {
        check(false, label + ": not a RedlockException: " + thrown);
        thrown.printStackTrace(System.out);
        return null;
      }
      RedlockException e = (RedlockException) thrown;
      check(ms < PROMPT_MS, label + ": the refusal took " + ms + " ms to end a " + WAIT_MS + " ms wait: "
          + e.getClass().getSimpleName() + ": " + e.getMessage());
      boolean named = false;
      for (int i : refusing)
        named |= e.getMessage().contains(hostPort(i));
      check(named, label + ": no refusing node named in: " + e.getMessage());
      check(!e.getMessage().contains(PW) && !e.getMessage().contains(OTHER_PW), label + ": a password shown");
      check(!(e instanceof LockTimeoutException) && !(e instanceof LockNotAcquiredException),
          label + ": a refusal reported as a busy lock: " + e);
      return e;
    } catch (RuntimeException e) {
      check(false, label + ": " + e);
      return null;
    }
  }

  /** Runs prim against urls with the lock free: acquired within 2 s, no key on the nodes in none. */
  private static void acquiredDespite(String prim, String[] urls, String what, int... none) throws Exception {
    String res = newName();
    String label = prim + ", " + what;
    try (Redlock c = new Redlock(urls)) {
      long t0 = System.nanoTime();
      Release r;
      try {
        r = prim(prim).acquire(c, res);
      } catch (Throwable t) {
        check(false, label + ": a free lock not taken with one refusing node of three: " + t);
        return;
      }
      long ms = (System.nanoTime() - t0) / 1_000_000;
      check(ms < PROMPT_MS, label + ": a free lock took " + ms + " ms with one refusing node");
      for (int i : none)
        check(lockKeys(i, res).isEmpty(), label + ": node " + i + " refused the client and holds lock keys "
            + lockKeys(i, res));
      r.run();
      passed++;
    }
  }

  private static void checkAuth(RedlockException e, String label, boolean missing) {
    if (e == null)
      return;
    check(e instanceof AuthException, label + ": not an AuthException: " + e.getClass().getSimpleName() + ": "
        + e.getMessage());
    check(e.getCode() == RedlockException.EAUTH, label + ": code " + e.getCode());
    if (missing)
      check(e.getMessage().contains(NOAUTH_TEXT), label + ": the cause (a password needed) is not in: "
          + e.getMessage());
    else
      check(WRONGPASS.matcher(e.getMessage()).find() && !e.getMessage().contains(NOAUTH_TEXT),
          label + ": the cause (the password refused) is not in: " + e.getMessage());
  }

  private static void checkPermission(RedlockException e, String label) {
    if (e == null)
      return;
    Class<?> cls;
    try {
      cls = Class.forName("io.redlock.PermissionDeniedException");
    } catch (ClassNotFoundException notYet) {
      cls = null;
    }
    check(cls != null, label + ": io.redlock.PermissionDeniedException does not exist");
    check(cls == null || cls.isInstance(e), label + ": not a PermissionDeniedException: "
        + e.getClass().getSimpleName() + ": " + e.getMessage());
    check(e.getCode() == EPERM && "REDLOCK_EPERM".equals(e.getErrorName()),
        label + ": not REDLOCK_EPERM: " + e.getErrorName() + " (" + e.getCode() + ")");
    check(!(e instanceof AuthException) && !(e instanceof ServerException),
        label + ": " + e.getClass().getSimpleName());
    check(COMMAND.matcher(e.getMessage()).find(), label + ": the refused command is not named: " + e.getMessage());
  }

  // ------------------------------------------------------------------ groups

  static void auth() throws Exception {
    makeUsers();
    try {
      for (String p : NAMES) {
        RedlockException e = refused(p, urls("two_wrongpw:" + PW), "wrong password on 2 of 3", 1, 2);
        checkAuth(e, p + ", wrong password on 2 of 3", false);
        checkNoLockKeys(lastName, p + ", wrong password on 2 of 3");
        acquiredDespite(p, urls("one_wrongpw:" + PW), "wrong password on 1 of 3", 2);
      }
    } finally {
      dropUsers();
    }
    requirePass(2);
    try {
      for (String p : NAMES)
        acquiredDespite(p, urls(null), "requirepass on 1 of 3");
    } finally {
      clearPass(2);
    }
    requirePass(0, 1, 2);
    try {
      for (String p : NAMES) {
        checkAuth(refused(p, urls(null), "no password", 0, 1, 2), p + ", no password", true);
        checkAuth(refused(p, urls(":" + OTHER_PW), "wrong password", 0, 1, 2), p + ", wrong password", false);
      }
    } finally {
      clearPass(0, 1, 2);
    }
  }

  static void permission() throws Exception {
    makeUsers();
    try {
      for (String p : NAMES) {
        for (String user : new String[] {"noscript", "noeval"}) {
          String what = user + " on 3 of 3";
          checkPermission(refused(p, urls(user + ":" + PW), what, 0, 1, 2), p + ", " + what);
          checkNoLockKeys(lastName, p + ", " + what);
        }
        checkPermission(refused(p, urls("two_noscript:" + PW), "no scripting on 2 of 3", 1, 2),
            p + ", no scripting on 2 of 3");
        checkNoLockKeys(lastName, p + ", no scripting on 2 of 3");
        acquiredDespite(p, urls("one_noscript:" + PW), "no scripting on 1 of 3", 2);
      }
    } finally {
      dropUsers();
    }
  }

  /**
   * Nodes with EVAL and EVALSHA disabled (rename-command ... ""; EVALSHA alone is no refusal:
   * the library runs its scripts with EVAL then). `nodes.py exec --conf` cannot pass a two-word
   * setting, so this group starts three such nodes itself through the harness's Python API
   * ($REDLOCK_HARNESS_PY, set by exec) and runs this class again under them.
   */
  static void renamed() throws Exception {
    if (System.getenv("REDLOCK_REFUSALS_RENAMED") == null) {
      String harness = System.getenv("REDLOCK_HARNESS_PY");
      String python = System.getenv("REDLOCK_HARNESS_PYTHON");
      if (harness == null)
        throw new IllegalStateException("REDLOCK_HARNESS_PY is not set: run under tests/harness/nodes.py exec");
      String program = String.join("\n",
          "import os, subprocess, sys",
          "sys.path.insert(0, os.path.dirname(sys.argv[1]))",
          "import nodes",
          "conf = {'rename-command': ['EVALSHA', '', '--rename-command', 'EVAL', '']}",
          "with nodes.Cluster(count=3, kind='mixed', conf=conf) as c:",
          "    env = {k: v for k, v in os.environ.items() if k != 'REDLOCK_HARNESS'}",
          "    env.update(REDLOCK_TEST_NODES=','.join(c.urls), REDLOCK_REFUSALS_RENAMED='1')",
          "    sys.exit(subprocess.run(sys.argv[2:], env=env).returncode)");
      List<String> cmd = new ArrayList<>(List.of(python != null ? python : "python3", "-c", program, harness,
          java.nio.file.Path.of(System.getProperty("java.home"), "bin", "java").toString(),
          "-Djava.library.path=" + System.getProperty("java.library.path", ""),
          "-cp", System.getProperty("java.class.path"), RefusalsTest.class.getName(), "renamed"));
      Process p = new ProcessBuilder(cmd).inheritIO().start();
      int rc = p.waitFor();
      check(rc == 0, "the run under nodes with EVAL and EVALSHA disabled exited " + rc);
      return;
    }
    for (int i = 0; i < 3; i++) {
      for (String[] command : new String[][] {{"EVALSHA", "0000000000000000000000000000000000000000", "0"},
                                              {"EVAL", "return 1", "0"}}) {
        boolean gone;
        try {
          node(i, null, command);
          gone = false;
        } catch (IOException e) {
          gone = e.getMessage().toLowerCase().contains("unknown command");
        }
        if (!gone) {
          System.err.println("renamed: node " + i + " still has " + command[0]);
          System.exit(2);
        }
      }
    }
    for (String p : NAMES) {
      checkPermission(refused(p, urls(null), "EVAL and EVALSHA disabled", 0, 1, 2), p + ", EVAL and EVALSHA disabled");
      checkNoLockKeys(lastName, p + ", EVAL and EVALSHA disabled");
    }
  }
}
