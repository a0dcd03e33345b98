-- Expired store items are found on PostgreSQL through the store_items
-- table's index on expires_at (migration 6, store.go:
-- pgExpiredStoreItemsSQL); the embedded backend's store_expiry entries are
-- no longer kept there.
DELETE FROM kv WHERE bucket = 'store_expiry';
