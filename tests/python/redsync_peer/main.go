// SPDX-License-Identifier: BSD-3-Clause
// A go-redsync holder for tests/python/test_wake_peers.py: takes a redsync
// mutex on the given nodes, prints "HELD <value>", waits for a line on
// stdin, unlocks, prints "RELEASED <true|false>" and exits (status 1 on any
// failure). redsync names the key after the mutex, with no prefix.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	rsgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredis "github.com/redis/go-redis/v9"
)

func main() {
	urls := flag.String("urls", "", "comma-separated redis://host:port")
	key := flag.String("key", "", "the mutex's name, which is its key")
	ttl := flag.Duration("ttl", 30*time.Second, "the mutex's expiry")
	flag.Parse()
	if *urls == "" || *key == "" {
		fmt.Fprintln(os.Stderr, "usage: redsync_peer -urls URL,... -key KEY [-ttl 30s]")
		os.Exit(2)
	}
	var pools []rsredis.Pool
	for _, u := range strings.Split(*urls, ",") {
		o, err := goredis.ParseURL(u)
		if err != nil {
			fmt.Fprintln(os.Stderr, "url:", err)
			os.Exit(1)
		}
		o.ReadTimeout, o.WriteTimeout = 500*time.Millisecond, 500*time.Millisecond
		pools = append(pools, rsgoredis.NewPool(goredis.NewClient(o)))
	}
	m := redsync.New(pools...).NewMutex(*key, redsync.WithExpiry(*ttl), redsync.WithTries(1))
	if err := m.Lock(); err != nil {
		fmt.Fprintln(os.Stderr, "lock:", err)
		os.Exit(1)
	}
	fmt.Printf("HELD %s\n", m.Value())
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fmt.Fprintln(os.Stderr, "stdin:", err)
	}
	ok, err := m.Unlock()
	fmt.Printf("RELEASED %v\n", ok)
	if err != nil || !ok {
		fmt.Fprintln(os.Stderr, "unlock:", err)
		os.Exit(1)
	}
}
