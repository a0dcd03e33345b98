// Package store is the LangGraph long-term memory store: JSON objects kept
// under a namespace (a path of labels) and a key, with optional
// time-to-live, searched by namespace prefix and value filters. (It is a
// service like threads or runs; package storage, which it writes through,
// owns the database itself.)
//
// # Invariants
//
//   - Key framing. An item lives in bbolt under its namespace labels joined
//     by 0x1f, then 0x00, then its key (see package storage). Labels are
//     non-empty and contain neither ".", 0x00 nor 0x1f, so the encoding is
//     injective and a prefix search for ["a"] visits exactly ["a"] and the
//     namespaces below it (["a","b"], ...) but never ["ab"].
//   - Expiry index consistency. An item with a deadline has exactly one
//     entry in store_expiry (deadline | item key), written and removed in
//     the same transaction as the item; overwriting, refreshing or deleting
//     an item moves or removes its entry. On PostgreSQL the deadline is the
//     store_items table's expires_at column, written by the same statement
//     as the item, and its index is the expiry index.
//   - Expired items are invisible. Get, Search and ListNamespaces compare
//     each item's expires_at with the service clock, so an item is gone at
//     its deadline whether or not the sweeper (Run, SweepExpired) has
//     physically deleted it yet. Writing over an expired item starts a new
//     item (a new created_at).
//   - Each operation is one storage transaction; a rejected Put writes
//     nothing. A value whose encoding is over 256 KiB is first staged in
//     chunks (storage.StageStoreValue) that the item's transaction then
//     takes up, so that a large put does not hold up the small writes of
//     other requests; a put that fails drops its staged value, and values
//     a crash left staged are swept by Run (SweepStaged).
//   - Vector index consistency. With semantic search on, the service keeps
//     an in-memory copy of the stored vectors (vectorIndex), loaded from
//     storage by the first semantic search. Put and Delete change it right
//     after their commit, holding a lock of the item (one of 64 by hash)
//     around both, so it takes one item's changes in commit order. The load
//     and the prune after a sweep take the index's write lock before their
//     read, so a write that commits during the read applies after it. The
//     index only chooses candidates: every result is read again from
//     storage (gone or expired items are skipped, filters applied) and its
//     score computed from the stored float32 vectors.
//
// # Choices
//
//   - Get of a missing item returns (nil, nil): the HTTP layer answers 200
//     with a JSON null, which both SDKs map to null/None (they raise on 404).
//     A namespace under which nothing can be stored (empty, empty labels,
//     labels with ".") is simply missing for Get and Delete.
//   - Delete of a missing item is not an error (the route answers 204 either
//     way), so deletes are idempotent.
//   - TTLs are minutes (float). A positive TTL sets expires_at = now + ttl;
//     nil means the configured default TTL (Options.TTL; none unless set),
//     and without one no expiry. refresh_ttl on Get or Search moves
//     expires_at of each returned item that has a TTL to now + ttl, without
//     touching updated_at; the HTTP layer passes RefreshOnRead (default
//     true, as LangGraph's stores) when the client does not say.
//   - Without semantic search (ConfigureIndex not called) the index
//     directive of Put is validated and kept but not used, and Search's
//     query narrows results to items whose value contains the query text,
//     case-insensitively, in some object key or scalar (strings as they
//     are, numbers, booleans and null as their JSON text), without score.
//   - With semantic search, Put embeds the texts at the index's field
//     paths before its transaction (no network inside it) and writes the
//     vectors in the same transaction as the item; an item and its vectors
//     are deleted together. Search with a query ranks the items that pass
//     the prefix and filter by their best cosine similarity to the query's
//     vector, then pages; items without vectors follow without a score.
//   - Semantic search runs in three passes over the vector index: the
//     sign bits of every vector under the prefix (Hamming distance to the
//     query's, all CPUs), then the int8 codes of the best 16×(offset+limit)
//     (at least 1,024), then the stored vectors of the best 4×(offset+limit)
//     (at least 64), which are read, checked and scored exactly. When the
//     checked items do not fill the page (a selective filter, or a page
//     reaching past the embedded items), the search ranks every match
//     exactly instead, reading all of them. An item that only the exact
//     score would put on the page but that both approximate passes rank
//     below their cut is missed; with 1,536 dimensions the passes' error is
//     far below the gap between a page and its cut.
//   - The index costs, per vector, dims bytes of int8 codes, dims/8 bytes
//     of sign bits and 4 of scale, plus per item its namespace, key and
//     about 100 bytes of bookkeeping: about 175 MB for 100,000 items of
//     1,536 dimensions (a float32 copy would be 614 MB). Loading it reads
//     every stored vector once (2.5 s for 100,000 on the benchmark
//     machine, 7 s under heavy load).
//   - Search filters compare top-level value fields: a scalar filter value
//     must equal the field, an object or array filter value must be
//     contained in it (jsonx.Contains), and an object whose keys are all
//     comparison operators ($eq, $ne, $gt, $gte, $lt, $lte) compares the
//     field with each operator, as LangGraph's stores do.
//   - Search orders by updated_at, newest first, then namespace and key.
//     It decodes every item under the prefix: there is no value index.
//   - In ListNamespaces the label "*" in prefix or suffix matches any one
//     label; in Search the prefix is literal.
package store
