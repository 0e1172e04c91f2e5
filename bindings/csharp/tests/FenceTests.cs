// SPDX-License-Identifier: BSD-3-Clause
// The "fence" group of RedlockTests: RedLockNet.Fence against a real Redis/Valkey node as the
// store (node 0 of the harness): the first write, equal and older tokens, tokens above 2^53, at
// 2^63 and at 2^64 - 1, every operation, NOSCRIPT, a fence key gone, store errors passed
// through, Fence.ForLock with a real lock, and the docs/fencing.md example, word for word. The
// store's client is this test's own tiny RESP client, so that the binding is shown to need no
// Redis client; the docs example runs on a stand-in with StackExchange.Redis's signatures
// (RedisKey, RedisValue, ScriptEvaluate, StringGet), not on StackExchange.Redis itself.
using System;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Linq;
using System.Net.Sockets;
using System.Text;
using System.Threading.Tasks;
using RedLockNet;
using RedLockNet.SERedis;
using FenceTestStore;

static partial class RedlockTests
{
    static Store fenceStore;

    static Store FenceStore()
    {
        return fenceStore ?? (fenceStore = new Store(urls[0]));
    }

    static Fence FenceOf(Store s, string resource, ulong token)
    {
        return new Fence(s.EvalSha, s.Eval, resource, token);
    }

    /// <summary>The refusal of token by fence, read back from the exception.</summary>
    static void Refused(Action write, ulong token, ulong fence, string what)
    {
        var e = Throws<FencedException>(write, what);
        Equal(token, e.Token, what + ": token");
        Equal(fence, e.Fence, what + ": fence");
        Equal(RedLockErrorCodes.EFENCED, e.Code, what + ": code");
        Equal("REDLOCK_EFENCED", e.CodeName, what + ": code name");
        Check(e.Message.Contains("token " + token + " is older than " + fence), what + ": the message names both: " + e.Message);
        Check(e.InnerException is StoreError || e.InnerException?.InnerException is StoreError,
              what + ": the store's error inside: " + e.InnerException);
    }

    static void FenceKeyNames()
    {
        Equal("{orders}:fence", Fence.KeyFor("orders"), "key of a plain name");
        Equal("{orders}:17:fence", Fence.KeyFor("{orders}:17"), "key of a tagged name");
        Throws<RedLockArgumentException>(() => Fence.KeyFor("a}b"), "a '}' without a tag");
        Throws<RedLockArgumentException>(() => Fence.KeyFor(""), "an empty resource");
        Throws<ArgumentNullException>(() => Fence.KeyFor(null), "a null resource");
        Equal(40, Fence.ScriptSha1.Length, "the script's SHA1");
        Check(Fence.Script.Contains("FENCED "), "the script is the C library's");
        Equal(TimeSpan.FromDays(7), Fence.DefaultRetention, "the default retention");
    }

    static void FenceTokens()
    {
        var s = FenceStore();
        string r = Resource("fence-tokens"), v = r + ":v";
        Equal(0UL, FenceOf(s, r, 5).Advance(), "advance on no fence: 0");
        Check(FenceOf(s, r, 5).Set(v, "five"), "the first write");
        Check(FenceOf(s, r, 5).Set(v, "five again"), "an equal token writes");
        Refused(() => FenceOf(s, r, 4).Set(v, "late"), 4, 5, "an older token");
        Equal("five again", s.Call("GET", v), "nothing written by the refused token");
        Equal("5", s.Call("GET", Fence.KeyFor(r)), "the fence holds the token in decimal");
        long pttl = (long)s.Call("PTTL", Fence.KeyFor(r));
        long week = (long)Fence.DefaultRetention.TotalMilliseconds;
        Check(pttl > week - 60000 && pttl <= week, "the fence's lifetime: " + pttl);
        Check(FenceOf(s, r, 10).Set(v, "ten"), "10 is above 9 and 5 (not compared as strings)");
        Refused(() => FenceOf(s, r, 9).Set(v, "nine"), 9, 10, "9 below 10");

        // Above 2^53, where a double would call the two equal; then past long's range.
        string big = Resource("fence-big");
        const ulong p53 = 1UL << 53, p63 = 1UL << 63, max = ulong.MaxValue;
        Equal(0UL, FenceOf(s, big, p53 + 1).Advance(), "advance to 2^53 + 1");
        Refused(() => FenceOf(s, big, p53).Set(big + ":v", "x"), p53, p53 + 1, "2^53 below 2^53 + 1");
        Equal(p53 + 1, FenceOf(s, big, p63).Advance(), "2^63 above 2^53 + 1, returns the old fence");
        Equal("9223372036854775808", s.Call("GET", Fence.KeyFor(big)), "the fence at 2^63");
        Equal(p63, FenceOf(s, big, max).Advance(), "2^64 - 1 above 2^63");
        Equal("18446744073709551615", s.Call("GET", Fence.KeyFor(big)), "the fence at 2^64 - 1");
        Check(FenceOf(s, big, max).Set(big + ":v", "max"), "2^64 - 1 writes at its own fence");
        Refused(() => FenceOf(s, big, p63).Set(big + ":v", "x"), p63, max, "2^63 below 2^64 - 1");
        Refused(() => FenceOf(s, big, max - 1).Set(big + ":v", "x"), max - 1, max, "2^64 - 2 below 2^64 - 1");
        Equal("max", s.Call("GET", big + ":v"), "only the 2^64 - 1 write landed");

        Throws<RedLockArgumentException>(() => FenceOf(s, big, 0), "token 0");
        Throws<RedLockArgumentException>(() => new Fence(s.Eval, big, 1, TimeSpan.Zero), "retention 0");
        Throws<ArgumentNullException>(() => new Fence(null, big, 1), "no store call");
        var shortLived = new Fence(s.EvalSha, s.Eval, Resource("fence-short"), 3, TimeSpan.FromMinutes(1));
        shortLived.Advance();
        long left = (long)s.Call("PTTL", shortLived.Key);
        Check(left > 0 && left <= 60000, "a retention given: " + left);
    }

    static void FenceOperations()
    {
        var s = FenceStore();
        string r = Resource("fence-ops");
        var f = FenceOf(s, r, 7);
        Check(f.Set(r + ":e", "x", TimeSpan.FromSeconds(30)), "set with an expiry");
        long pttl = (long)s.Call("PTTL", r + ":e");
        Check(pttl > 0 && pttl <= 30000, "the expiry applied: " + pttl);
        Check(f.Delete(r + ":e"), "delete: removed");
        Check(!f.Delete(r + ":e"), "delete again: nothing to remove");
        Equal(2L, f.HashSet(r + ":h", new Dictionary<string, string> { { "a", "1" }, { "b", "2" } }), "HashSet: 2 fields added");
        Equal("2", s.Call("HGET", r + ":h", "b"), "HashSet wrote");
        Check(f.HashSet(r + ":h", "c", "3"), "HashSet of a new field: true");
        Check(!f.HashSet(r + ":h", "c", "4"), "HashSet of an existing field: false");
        Equal("4", s.Call("HGET", r + ":h", "c"), "and updated it");
        Equal(2L, f.ListRightPush(r + ":l", "x", "y"), "ListRightPush: the length");
        Equal(3L, f.ListRightPush(r + ":l", "z"), "ListRightPush again");
        Equal(1L, f.Increment(r + ":n"), "Increment");
        Equal(-4L, f.Increment(r + ":n", -5), "Increment by -5");

        var late = FenceOf(s, r, 6);
        Refused(() => late.Set(r + ":n", "late"), 6, 7, "Set refused");
        Refused(() => late.HashSet(r + ":h", "a", "9"), 6, 7, "HashSet refused");
        Refused(() => late.ListRightPush(r + ":l", "late"), 6, 7, "ListRightPush refused");
        Refused(() => late.Increment(r + ":n"), 6, 7, "Increment refused");
        Refused(() => late.Delete(r + ":l"), 6, 7, "Delete refused");
        Refused(() => late.Advance(), 6, 7, "Advance refused");
        Equal("1", s.Call("HGET", r + ":h", "a"), "HashSet not applied");
        Equal(3L, s.Call("LLEN", r + ":l"), "ListRightPush not applied");
        Equal("-4", s.Call("GET", r + ":n"), "Increment not applied");

        Throws<RedLockArgumentException>(() => f.HashSet(r + ":h", new Dictionary<string, string>()), "HashSet of nothing");
        Throws<RedLockArgumentException>(() => f.ListRightPush(r + ":l"), "ListRightPush of nothing");
        Throws<RedLockArgumentException>(() => f.Set(r + ":v", "x", TimeSpan.Zero), "an expiry of 0");
        Throws<ArgumentNullException>(() => f.Set(null, "x"), "a null key");
        Throws<ArgumentNullException>(() => f.Set(r + ":v", null), "a null value");
        // Another error is the client's own, unchanged: not a refusal.
        var e = Throws<StoreError>(() => f.Set(f.Key, "x"), "the data key is the fence key");
        Check(e.Message.Contains("the data key is the fence key"), "the script's other error, as thrown: " + e.Message);
        e = Throws<StoreError>(() => f.Increment(r + ":l"), "Increment of a list");
        Check(e.Message.Contains("WRONGTYPE"), "the WRONGTYPE, as thrown: " + e.Message);
    }

    static void FenceNoScriptAndLostFence()
    {
        var s = FenceStore();
        string r = Resource("fence-noscript");
        s.Call("SCRIPT", "FLUSH");
        long sha0 = s.EvalShaCalls, eval0 = s.EvalCalls;
        Check(FenceOf(s, r, 3).Set(r + ":v", "three"), "a write after SCRIPT FLUSH");
        Equal(1L, s.EvalShaCalls - sha0, "EVALSHA first");
        Equal(1L, s.EvalCalls - eval0, "then EVAL on NOSCRIPT");
        Check(FenceOf(s, r, 3).Set(r + ":v", "three again"), "the next write");
        Equal(2L, s.EvalShaCalls - sha0, "EVALSHA, now that the store has the script");
        Equal(1L, s.EvalCalls - eval0, "and no EVAL");
        s.Call("SCRIPT", "FLUSH");
        Refused(() => FenceOf(s, r, 2).Set(r + ":v", "two"), 2, 3, "the refusal after NOSCRIPT");

        // One call only: the script itself each time.
        string sent = null;
        var one = new Fence((script, keys, args) => { sent = script; return s.Eval(script, keys, args); }, r, 3);
        Check(one.Set(r + ":v", "by eval"), "one call: EVAL");
        Equal(Fence.Script, sent, "one call gets the script");

        // A client that wraps the reply (a task's AggregateException) is still read.
        var wrapped = new Fence((script, keys, args) => Task.Run(() => s.Eval(script, keys, args)).Result, r, 2);
        Refused(() => wrapped.Set(r + ":v", "two"), 2, 3, "a refusal inside an AggregateException");
        var ae = Throws<AggregateException>(() => wrapped.Set(wrapped.Key, "x"), "another error wrapped");
        Check(ae.InnerException is StoreError, "passed through as thrown: " + ae);

        // A fence key gone (evicted, flushed) lets the next write through and is made again from it.
        s.Call("DEL", Fence.KeyFor(r));
        Check(FenceOf(s, r, 2).Set(r + ":v", "two"), "the fence gone: the next write goes through");
        Equal("2", s.Call("GET", Fence.KeyFor(r)), "and makes the fence again");
        Refused(() => FenceOf(s, r, 1).Set(r + ":v", "one"), 1, 2, "refused again from the new fence");
    }

    static void FenceWithLock()
    {
        var s = FenceStore();
        string r = Resource("fence-lock");
        using (var factory = Factory(new RedLockFactoryOptions { Fencing = true }))
        {
            ulong first;
            using (var l = factory.CreateLock(r, TimeSpan.FromSeconds(10)))
            {
                Check(l.IsAcquired, "acquired");
                var f = Fence.ForLock(l, s.EvalSha, s.Eval);
                first = f.Token;
                Equal((ulong)l.FencingToken, first, "ForLock takes the lock's token");
                Equal(r, f.Resource, "ForLock takes the lock's resource");
                f.Advance();
                Check(f.Set(r + ":v", "first"), "the holder writes");
            }
            using (var l = factory.CreateLock(r, TimeSpan.FromSeconds(10)))
            {
                Check(l.IsAcquired, "acquired again");
                var f = Fence.ForLock(l, s.Eval);
                Check(f.Token > first, "the next holder's token is higher: " + first + " then " + f.Token);
                f.Advance();
                Refused(() => FenceOf(s, r, first).Set(r + ":v", "late"), first, f.Token, "the first holder, late");
                Check(f.Set(r + ":v", "second"), "the new holder writes");
                Equal("second", s.Call("GET", r + ":v"), "the late write lost nothing");
                using (var other = factory.CreateLock(r, TimeSpan.FromSeconds(10)))
                {
                    Equal(RedLockStatus.Conflicted, other.Status, "another owner is refused");
                    var e = Throws<RedLockException>(() => Fence.ForLock(other, s.Eval), "ForLock of a lock not acquired");
                    Equal(RedLockErrorCodes.ESTATE, e.Code, "ESTATE: " + e.Message);
                }
                l.Dispose();
                Throws<RedLockException>(() => Fence.ForLock(l, s.Eval), "ForLock of a lock released");
            }
        }
        using (var plain = Factory())
        using (var l = plain.CreateLock(Resource("fence-nofencing"), TimeSpan.FromSeconds(10)))
        {
            Check(l.IsAcquired, "acquired without fencing");
            var e = Throws<RedLockException>(() => Fence.ForLock(l, s.Eval), "ForLock without fencing");
            Equal(RedLockErrorCodes.ESTATE, e.Code, "ESTATE: " + e.Message);
        }
    }

    /// <summary>The C# example of docs/fencing.md, "Protecting your store", which must be this
    /// block word for word (checked below); db has StackExchange.Redis's signatures.</summary>
    static void FenceDocsExample()
    {
        var db = new Database(FenceStore());
        string[] nodes = urls;
        FenceStore().Call("DEL", "orders:total");
        for (int round = 1; round <= 2; round++)
        {
            // --8<-- docs/fencing.md csharp
            using (var factory = RedLockFactory.Create(nodes, new RedLockFactoryOptions { Fencing = true }))
            using (var l = factory.CreateLock("orders", TimeSpan.FromSeconds(30)))
            {
                if (!l.IsAcquired)
                    throw new InvalidOperationException("orders: " + l.Status);
                var orders = Fence.ForLock(l, (script, keys, args) => db.ScriptEvaluate(script,
                    Array.ConvertAll(keys, k => (RedisKey)k), Array.ConvertAll(args, a => (RedisValue)a)));
                orders.Advance();              // a late write of the previous holder fails from now on
                long total = (long)db.StringGet("orders:total");
                orders.Set("orders:total", (total + 1).ToString());   // FencedException if a later holder has written
            }
            // -->8--
            Equal(round.ToString(), FenceStore().Call("GET", "orders:total"), "the docs example wrote, round " + round);
        }
        string src = Environment.GetEnvironmentVariable("REDLOCK_SOURCE_DIR");
        Check(!string.IsNullOrEmpty(src), "REDLOCK_SOURCE_DIR (the source tree) is set, to compare with docs/fencing.md");
        Equal(Block(File.ReadAllText(Path.Combine(src, "bindings/csharp/tests/FenceTests.cs")),
                    "// --8<-- docs/fencing.md csharp", "// -->8--"),
              Block(File.ReadAllText(Path.Combine(src, "docs/fencing.md")), "```csharp", "```"),
              "docs/fencing.md's C# example is the one run here");
    }

    /// <summary>The lines between the first line that is start and the next that is end, dedented.</summary>
    static string Block(string text, string start, string end)
    {
        var lines = text.Split('\n');
        int from = Array.FindIndex(lines, l => l.Trim() == start);
        if (from < 0)
            return "(no " + start + ")";
        var body = lines.Skip(from + 1).TakeWhile(l => l.Trim() != end).ToList();
        int indent = body.Where(l => l.Trim().Length > 0).Select(l => l.Length - l.TrimStart().Length)
                         .DefaultIfEmpty(0).Min();
        var b = new StringBuilder();
        foreach (string l in body)
            b.Append(l.Trim().Length == 0 ? "" : l.Substring(indent).TrimEnd('\r')).Append('\n');
        return b.ToString();
    }
}

namespace FenceTestStore
{
    /// <summary>An error reply, as a client throws it: the message is the reply's text.</summary>
    class StoreError : Exception
    {
        public StoreError(string reply) : base(reply) { }
    }

    /// <summary>A tiny RESP client: one connection, one command at a time.</summary>
    sealed class Store
    {
        readonly Stream stream;
        readonly object gate = new object();
        public long EvalShaCalls, EvalCalls;

        public Store(string url)
        {
            var u = new Uri(url);
            var tcp = new TcpClient(u.Host, u.Port) { ReceiveTimeout = 10000, SendTimeout = 10000 };
            stream = new BufferedStream(tcp.GetStream());
        }

        public object Call(params string[] words)
        {
            lock (gate)
            {
                var req = new MemoryStream();
                byte[] head = Encoding.ASCII.GetBytes("*" + words.Length + "\r\n");
                req.Write(head, 0, head.Length);
                foreach (string w in words)
                {
                    byte[] b = Encoding.UTF8.GetBytes(w);
                    byte[] len = Encoding.ASCII.GetBytes("$" + b.Length + "\r\n");
                    req.Write(len, 0, len.Length);
                    req.Write(b, 0, b.Length);
                    req.Write(new byte[] { 13, 10 }, 0, 2);
                }
                stream.Write(req.ToArray(), 0, (int)req.Length);
                stream.Flush();
                return Reply();
            }
        }

        /// <summary>EVALSHA and EVAL: the delegates a Fence takes.</summary>
        public object EvalSha(string sha1, string[] keys, string[] args)
        {
            System.Threading.Interlocked.Increment(ref EvalShaCalls);
            return Script("EVALSHA", sha1, keys, args);
        }

        public object Eval(string script, string[] keys, string[] args)
        {
            System.Threading.Interlocked.Increment(ref EvalCalls);
            return Script("EVAL", script, keys, args);
        }

        object Script(string verb, string body, string[] keys, string[] args)
        {
            var w = new List<string> { verb, body, keys.Length.ToString(CultureInfo.InvariantCulture) };
            w.AddRange(keys);
            w.AddRange(args);
            return Call(w.ToArray());
        }

        object Reply()
        {
            string line = Line();
            switch (line[0])
            {
                case '+': return line.Substring(1);
                case '-': throw new StoreError(line.Substring(1));
                case ':': return long.Parse(line.Substring(1), CultureInfo.InvariantCulture);
                case '$':
                {
                    int n = int.Parse(line.Substring(1), CultureInfo.InvariantCulture);
                    if (n < 0)
                        return null;
                    var b = new byte[n + 2];
                    for (int got = 0; got < b.Length;)
                    {
                        int k = stream.Read(b, got, b.Length - got);
                        if (k <= 0)
                            throw new IOException("the store closed the connection");
                        got += k;
                    }
                    return Encoding.UTF8.GetString(b, 0, n);
                }
                case '*':
                {
                    int n = int.Parse(line.Substring(1), CultureInfo.InvariantCulture);
                    var l = new object[Math.Max(n, 0)];
                    for (int i = 0; i < n; i++)
                        l[i] = Reply();
                    return l;
                }
                default: throw new IOException("unexpected reply " + line);
            }
        }

        string Line()
        {
            var b = new MemoryStream();
            int c;
            while ((c = stream.ReadByte()) != '\n')
            {
                if (c < 0)
                    throw new IOException("the store closed the connection");
                if (c != '\r')
                    b.WriteByte((byte)c);
            }
            return Encoding.UTF8.GetString(b.ToArray());
        }
    }

    // A stand-in with StackExchange.Redis's signatures, for the docs example only: what it
    // shows compiles against StackExchange.Redis's IDatabase as well (not tested here).
    struct RedisKey
    {
        public readonly string Value;
        RedisKey(string v) { Value = v; }
        public static implicit operator RedisKey(string s) { return new RedisKey(s); }
    }

    struct RedisValue
    {
        public readonly string Value;
        RedisValue(string v) { Value = v; }
        public static implicit operator RedisValue(string s) { return new RedisValue(s); }
        // As StackExchange.Redis's: a missing value reads as 0.
        public static explicit operator long(RedisValue v)
        {
            return v.Value == null ? 0 : long.Parse(v.Value, CultureInfo.InvariantCulture);
        }
    }

    sealed class RedisResult
    {
        readonly object reply;
        public RedisResult(object reply) { this.reply = reply; }
        public override string ToString() { return Convert.ToString(reply, CultureInfo.InvariantCulture); }
    }

    sealed class Database
    {
        readonly Store store;
        public Database(Store store) { this.store = store; }

        public RedisResult ScriptEvaluate(string script, RedisKey[] keys = null, RedisValue[] values = null)
        {
            return new RedisResult(store.Eval(script, (keys ?? new RedisKey[0]).Select(k => k.Value).ToArray(),
                                              (values ?? new RedisValue[0]).Select(v => v.Value).ToArray()));
        }

        public RedisValue StringGet(RedisKey key)
        {
            return (RedisValue)(string)store.Call("GET", key.Value);
        }
    }
}
