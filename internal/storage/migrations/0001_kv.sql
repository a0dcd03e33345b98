-- Every bucket of the key-value tree in one table: keys compare as unsigned
-- bytes (bytea order), as in bbolt, so the record code above the seam works
-- unchanged.
CREATE TABLE kv (
	bucket text NOT NULL,
	k bytea NOT NULL,
	v bytea NOT NULL,
	PRIMARY KEY (bucket, k)
);
