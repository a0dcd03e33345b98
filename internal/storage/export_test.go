package storage

import bolt "go.etcd.io/bbolt"

type boltTx = bolt.Tx

// boltDB is the bbolt handle of a database opened with Open.
func (db *DB) boltDB() *bolt.DB { return db.be.(*boltBackend).db }
