// SPDX-License-Identifier: BSD-3-Clause
// Fence.cs: fenced writes to a Redis/Valkey store (docs/fencing.md, "Protecting your store"):
// the C library's one script, run on the caller's own client through delegates, so that the
// token comparison (64-bit integers), the fence key's name, its lifetime and the reading of a
// refusal are the library's, and this binding depends on no Redis client.
using System;
using System.Collections.Generic;
using System.Globalization;
using System.Text;

namespace RedLockNet
{
    /// <summary>
    /// Writes to one resource on a Redis or Valkey store (not necessarily a lock node) that are
    /// applied only while this token is at least the highest token a write to the resource has
    /// carried, and that raise that fence to it, atomically on the store. An older token throws
    /// <see cref="FencedException"/> naming both, and writes nothing: a later holder has written.
    /// </summary>
    /// <remarks>
    /// The store is the caller's own client, given as a delegate that runs a script:
    /// <c>(script, keys, args) =&gt; reply</c>, throwing the client's exception for an error
    /// reply. With StackExchange.Redis's <c>IDatabase</c>:
    /// <code>
    /// var orders = Fence.ForLock(l, (script, keys, args) =&gt; db.ScriptEvaluate(script,
    ///     Array.ConvertAll(keys, k =&gt; (RedisKey)k), Array.ConvertAll(args, a =&gt; (RedisValue)a)));
    /// </code>
    /// Given one delegate, every write sends the script itself (EVAL, or EVALSHA where
    /// the client caches scripts). Given two, the first gets the
    /// script's SHA1 (EVALSHA) and, when the store replies NOSCRIPT, the second the script (EVAL).
    /// A store error other than the refusal is whatever the client threw, unchanged. On a cluster
    /// store, name the data keys with the resource's hash tag (<c>{orders}:17</c> for the resource
    /// <c>{orders}</c>) or the store refuses the script (CROSSSLOT). Immutable; as thread-safe as
    /// the client behind the delegates.
    /// </remarks>
    public sealed class Fence
    {
        /// <summary>How long a fence outlives the last fenced write to its resource by default:
        /// seven days (REDLOCK_FENCE_RETENTION_MS).</summary>
        public static readonly TimeSpan DefaultRetention;

        static readonly string script;
        static readonly string sha1;

        readonly Func<string, string[], string[], object> evalSha;
        readonly Func<string, string[], string[], object> eval;
        readonly string tokenText;
        readonly string retentionText;

        static Fence()
        {
            // Under Mono, the package's native library before the first P/Invoke (NativeLoader.cs).
            GC.KeepAlive(Native.NativeLoader.Loaded);
            DefaultRetention = TimeSpan.FromMilliseconds(Native.RedlockModule.REDLOCK_FENCE_RETENTION_MS);
            script = Native.Redlock.fenceScript();
            sha1 = Native.Redlock.fenceScriptSha1();
        }

        /// <summary>The fence of resource with token (1 to 2^64 - 1, as
        /// <see cref="IRedLock.FencingToken"/> gives it, or handed over to a worker), each write
        /// sending the script through eval.</summary>
        public Fence(Func<string, string[], string[], object> eval, string resource, ulong token,
                     TimeSpan? retention = null)
            : this(null, eval, resource, token, retention)
        {
        }

        /// <summary>The fence of resource with token, each write trying evalSha with the script's
        /// SHA1 first and eval with the script on NOSCRIPT. A retention (at least 1 ms; default
        /// <see cref="DefaultRetention"/>) is how long the fence outlives the resource's last fenced
        /// write: a holder stalled longer than that after it is not fenced, and a resource no
        /// longer written to leaves no key behind.</summary>
        public Fence(Func<string, string[], string[], object> evalSha, Func<string, string[], string[], object> eval,
                     string resource, ulong token, TimeSpan? retention = null)
        {
            if (eval == null)
                throw new ArgumentNullException(nameof(eval), "the store client's call that runs a script");
            if (token == 0)
                throw new RedLockArgumentException(
                    "token must be from 1 to 2^64-1, got 0 (a lock made without fencing, or not held?)");
            TimeSpan keep = retention ?? DefaultRetention;
            long ms = (long)Math.Floor(keep.TotalMilliseconds);
            if (ms < 1)
                throw new RedLockArgumentException("retention must be at least 1 ms, got " + keep);
            Key = KeyFor(resource);
            this.evalSha = evalSha;
            this.eval = eval;
            Resource = resource;
            Token = token;
            Retention = TimeSpan.FromMilliseconds(ms);
            tokenText = token.ToString(CultureInfo.InvariantCulture);
            retentionText = ms.ToString(CultureInfo.InvariantCulture);
        }

        /// <summary>The fence of l's resource with the token of its current acquisition (a
        /// factory made with <see cref="RedLockNet.SERedis.RedLockFactoryOptions.Fencing"/>).
        /// Make a new one after each acquisition.</summary>
        /// <exception cref="RedLockException">REDLOCK_ESTATE: the lock is not held, or has no
        /// token (fencing is off).</exception>
        public static Fence ForLock(IRedLock l, Func<string, string[], string[], object> eval, TimeSpan? retention = null)
        {
            return ForLock(l, null, eval, retention);
        }

        /// <summary>As <see cref="ForLock(IRedLock, Func{string, string[], string[], object}, TimeSpan?)"/>,
        /// with EVALSHA first (evalSha) and EVAL on NOSCRIPT (eval).</summary>
        public static Fence ForLock(IRedLock l, Func<string, string[], string[], object> evalSha,
                                    Func<string, string[], string[], object> eval, TimeSpan? retention = null)
        {
            if (l == null)
                throw new ArgumentNullException(nameof(l));
            ulong t = unchecked((ulong)l.FencingToken);
            if (!l.IsAcquired || t == 0)
                throw new RedLockException(RedLockErrorCodes.ESTATE, "'" + l.Resource +
                    "': no fencing token: the lock is not held, or its factory was made without Fencing");
            return new Fence(evalSha, eval, l.Resource, t, retention);
        }

        /// <summary>The store key holding resource's fence: <c>{resource}:fence</c>, or
        /// <c>resource:fence</c> when the name has a hash tag (the C library's redlock_fence_key).</summary>
        /// <exception cref="RedLockArgumentException">an empty name, one too long, or a '}' without a hash tag</exception>
        public static string KeyFor(string resource)
        {
            if (resource == null)
                throw new ArgumentNullException(nameof(resource));
            if (resource.IndexOf('\0') >= 0)
                throw new RedLockArgumentException("the resource contains a NUL");
            return Native.Redlock.fenceKey(resource);
        }

        /// <summary>The Lua source of the C library's fence script (redlock_fence_script).</summary>
        public static string Script { get { return script; } }

        /// <summary>The SHA1 of <see cref="Script"/> in hex, for EVALSHA.</summary>
        public static string ScriptSha1 { get { return sha1; } }

        /// <summary>The resource this fence protects.</summary>
        public string Resource { get; }

        /// <summary>The store key of the fence, <see cref="KeyFor"/> of the resource.</summary>
        public string Key { get; }

        /// <summary>The token this fence writes with.</summary>
        public ulong Token { get; }

        /// <summary>How long the fence outlives the resource's last fenced write.</summary>
        public TimeSpan Retention { get; }

        public override string ToString()
        {
            return "Fence(" + Resource + ", token=" + tokenText + ", key=" + Key + ")";
        }

        /// <summary>Raises the fence to this token without writing data, and returns the fence it
        /// had (0: none). A new holder calls it first, before it reads what it will write: from
        /// then on the previous holder's late writes are refused.</summary>
        public ulong Advance()
        {
            return ulong.Parse(Text(Run("advance", null)), NumberStyles.None, CultureInfo.InvariantCulture);
        }

        /// <summary>SET key value [PX expiry], fenced (StringSet's shape); true, the store's OK.</summary>
        public bool Set(string key, string value, TimeSpan? expiry = null)
        {
            if (expiry == null)
                return Text(Run("set", key, value)) == "OK";
            long px = (long)Math.Floor(expiry.Value.TotalMilliseconds);
            if (px < 1)
                throw new RedLockArgumentException("expiry must be at least 1 ms, got " + expiry.Value);
            return Text(Run("set", key, value, px.ToString(CultureInfo.InvariantCulture))) == "OK";
        }

        /// <summary>DEL key, fenced (KeyDelete's shape); true if the key was removed.</summary>
        public bool Delete(string key)
        {
            return Integer(Run("del", key)) > 0;
        }

        /// <summary>HSET key field value, fenced; true if the field is new, false if it was updated.</summary>
        public bool HashSet(string key, string field, string value)
        {
            return Integer(Run("hset", key, field, value)) == 1;
        }

        /// <summary>HSET key field value ..., fenced (at least one field); the number of fields added.</summary>
        public long HashSet(string key, IEnumerable<KeyValuePair<string, string>> fields)
        {
            var args = new List<string>();
            if (fields != null)
                foreach (var f in fields)
                {
                    args.Add(f.Key);
                    args.Add(f.Value);
                }
            if (args.Count == 0)
                throw new RedLockArgumentException("HashSet needs at least one field");
            return Integer(Run("hset", key, args.ToArray()));
        }

        /// <summary>RPUSH key value ..., fenced (at least one value); the list's length after it.</summary>
        public long ListRightPush(string key, params string[] values)
        {
            if (values == null || values.Length == 0)
                throw new RedLockArgumentException("ListRightPush needs at least one value");
            return Integer(Run("rpush", key, values));
        }

        /// <summary>INCRBY key value, fenced (StringIncrement's shape); the value after it.</summary>
        public long Increment(string key, long value = 1)
        {
            return Integer(Run("incrby", key, value.ToString(CultureInfo.InvariantCulture)));
        }

        object Run(string op, string dataKey, params string[] operands)
        {
            if (dataKey == null && op != "advance")
                throw new ArgumentNullException("key");
            string[] keys = dataKey == null ? new[] { Key } : new[] { Key, dataKey };
            var args = new string[3 + operands.Length];
            args[0] = tokenText;
            args[1] = retentionText;
            args[2] = op;
            for (int i = 0; i < operands.Length; i++)
            {
                if (operands[i] == null)
                    throw new ArgumentNullException("value", "a null value for " + op);
                args[3 + i] = operands[i];
            }
            try
            {
                if (evalSha == null)
                    return eval(script, keys, args);
                try
                {
                    return evalSha(sha1, keys, args);
                }
                catch (Exception e) when (Find(e, "NOSCRIPT") != null)
                {
                    return eval(script, keys, args);
                }
            }
            catch (Exception e) when (Refusal(e) != null)
            {
                string msg = Refusal(e);
                throw new FencedException(Resource, unchecked((ulong)Native.Redlock.fenceRefusal(msg, 0)),
                                          unchecked((ulong)Native.Redlock.fenceRefusal(msg, 1)), msg, e);
            }
        }

        /// <summary>The store's refusal in e or an exception it wraps (a client may wrap the
        /// reply, a task in an AggregateException), read by the C library; else null.</summary>
        static string Refusal(Exception e)
        {
            string m = Find(e, "FENCED ");
            return m != null && m.IndexOf('\0') < 0 && Native.Redlock.fenceRefusal(m, 0) != 0 ? m : null;
        }

        static string Find(Exception e, string prefix)
        {
            for (int depth = 0; e != null && depth < 8; depth++)
            {
                string m = e.Message;
                if (m != null && m.StartsWith(prefix, StringComparison.Ordinal))
                    return m;
                var ae = e as AggregateException;
                e = ae != null && ae.InnerExceptions.Count == 1 ? ae.InnerExceptions[0] : e.InnerException;
            }
            return null;
        }

        static string Text(object reply)
        {
            if (reply == null)
                throw new InvalidOperationException("the store replied nil");
            var bytes = reply as byte[];
            if (bytes != null)
                return Encoding.UTF8.GetString(bytes);
            return Convert.ToString(reply, CultureInfo.InvariantCulture);
        }

        static long Integer(object reply)
        {
            if (reply is long)
                return (long)reply;
            if (reply is int)
                return (int)reply;
            return long.Parse(Text(reply), NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture);
        }
    }

    /// <summary>
    /// The store refused a <see cref="Fence"/> write (REDLOCK_EFENCED): its <see cref="Token"/> is
    /// older than the resource's fence, the highest token a write to it has carried, so a later
    /// holder has written. Nothing was written. InnerException is what the store's client threw.
    /// </summary>
    public class FencedException : RedLockException
    {
        /// <summary>The resource whose fence refused the write.</summary>
        public string Resource { get; }

        /// <summary>The refused write's token.</summary>
        public ulong Token { get; }

        /// <summary>The resource's fence when the write was refused, above <see cref="Token"/>.</summary>
        public ulong Fence { get; }

        /// <summary>The store's error reply.</summary>
        public string Reply { get; }

        public FencedException(string resource, ulong token, ulong fence, string reply, Exception inner = null)
            : base(RedLockErrorCodes.EFENCED, "'" + resource + "': token " + token + " is older than " + fence +
                   ", the highest this resource has seen: a later holder has written (" + reply + ")", inner)
        {
            Resource = resource;
            Token = token;
            Fence = fence;
            Reply = reply;
        }
    }
}
