// SPDX-License-Identifier: BSD-3-Clause

// The example of docs/go.md, "Fenced writes", on the harness's nodes (node 0
// the store) and PostgreSQL.

package fence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	redlock "github.com/redlock-project/redlock/bindings/go"
	"github.com/redlock-project/redlock/bindings/go/fence"
)

func Example() {
	ctx := context.Background()
	resource := fmt.Sprintf("orders-%d", seq.Add(1000))
	client, err := redlock.NewClient(nodeURLs, redlock.WithFencing())
	if err != nil {
		panic(err)
	}
	defer client.Close()
	store := stores[0]

	// A holder whose lock ran out, and the next one.
	old := client.NewMutex(resource)
	if err := old.Lock(); err != nil {
		panic(err)
	}
	late, _ := fence.New(store, resource, old.Token())
	old.Unlock()
	m := client.NewMutex(resource)
	if err := m.Lock(); err != nil {
		panic(err)
	}
	defer m.Unlock()

	f, err := fence.ForMutex(store, m)
	if err != nil {
		panic(err)
	}
	if _, err := f.Advance(ctx); err != nil { // the previous holder's late writes fail from now on
		panic(err)
	}
	total, _ := store.Get(ctx, resource+":total").Int64()
	if err := f.Set(ctx, resource+":total", total+1, 0); err != nil {
		panic(err)
	}
	err = late.Set(ctx, resource+":total", 100, 0)
	var st *fence.StaleTokenError
	fmt.Println(errors.Is(err, redlock.ErrFenced), errors.As(err, &st) && st.Token < st.Fence)

	db, err := sql.Open("pgx", pgDSN)
	if err != nil {
		panic(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS orders (id bigint PRIMARY KEY, total bigint, fence bigint)`); err != nil {
		panic(err)
	}
	id := seq.Add(1)
	err = fence.Upsert(ctx, db, "orders", fence.Cols("id", id), fence.Cols("total", total+1), m.Token())
	fmt.Println(err)
	err = fence.Upsert(ctx, db, "orders", fence.Cols("id", id), fence.Cols("total", 100), late.Token())
	fmt.Println(errors.Is(err, redlock.ErrFenced))
	// Output:
	// true true
	// <nil>
	// true
}
