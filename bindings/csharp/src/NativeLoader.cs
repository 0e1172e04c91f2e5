// SPDX-License-Identifier: BSD-3-Clause
// Finds the package's native library under Mono. The .NET host resolves
// [DllImport("libredlock_csharp")] to runtimes/linux-x64/native/ of the
// package from its deps.json; Mono looks only next to the assembly and on the
// system's library path. So, under Mono and before the first P/Invoke, this
// loads runtimes/linux-x64/native/libredlock_csharp.so from where the package
// put it (the .nupkg unzipped: ../../runtimes/ from lib/netstandard2.0/; an
// application's output directory: runtimes/ beside the assembly). Mono's own
// dlopen("libredlock_csharp.so") then finds that library by its soname. Nothing
// is loaded when a libredlock_csharp.so sits beside the assembly (Mono takes
// that one) or when neither place has it (the library path decides, as before).
using System;
using System.IO;
using System.Runtime.InteropServices;

namespace RedLockNet.Native
{
    internal static class NativeLoader
    {
        const string Library = "libredlock_csharp.so";
        const int RtldNow = 2;

        [DllImport("libdl.so.2", EntryPoint = "dlopen")]
        static extern IntPtr DlOpen(string file, int mode);

        /// <summary>The path loaded, or null; read it to make sure the load has run.</summary>
        internal static readonly string Loaded = Load();

        static string Load()
        {
            try
            {
                if (Type.GetType("Mono.Runtime") == null || Environment.OSVersion.Platform != PlatformID.Unix ||
                    IntPtr.Size != 8)
                    return null;
                string dir = Path.GetDirectoryName(typeof(NativeLoader).Assembly.Location);
                if (string.IsNullOrEmpty(dir) || File.Exists(Path.Combine(dir, Library)))
                    return null;
                string[] candidates =
                {
                    Path.Combine(dir, "..", "..", "runtimes", "linux-x64", "native", Library),
                    Path.Combine(dir, "runtimes", "linux-x64", "native", Library),
                };
                foreach (string c in candidates)
                {
                    string p = Path.GetFullPath(c);
                    if (File.Exists(p) && DlOpen(p, RtldNow) != IntPtr.Zero)
                        return p;
                }
            }
            catch (Exception)
            {
                // No libdl (not glibc): the library path decides, as without this class.
            }
            return null;
        }
    }
}
