// Package intake is what the platform intakes keep in Redis: the leases of intakes a platform
// allows only once (Telegram long polling, a Discord shard, a Slack Socket Mode slot) and the
// census of the processes sharing a set of them, the Telegram update offset and the inbox of
// fetched batches, the Slack installations (tokens sealed) and their one-time OAuth state claims,
// and the Discord gateway sessions by shard.
//
// It knows no adapter, no platform SDK and no channels package: its types are plain
// (Installation, InboxBatch, Session) and the wiring converts them to the adapters' own. Lease
// has the method set of the intake lease and census interfaces the adapters take (Lease and
// Census in channels/kit), so it is both without importing them.
//
// # Keys
//
// With P the configured prefix (redis.prefix, default "sb:"); deployed stores hold these keys,
// so none is renamed without a migration:
//
//	Pintake:<name>                     string  an intake's lease: its owner's id, PX the lease's TTL
//	Pintake:members:<group>            zset    a lease set's census: owner → when its attendance
//	                                           lapses (ms, Redis clock); PX three TTLs
//	Ptelegram:offset:<bot id>          string  the next update id to poll; no TTL; only moves forward
//	Ptelegram:inbox:<bot id>           stream  batches fetched and not yet handed over, one entry
//	                                           each: from, next, updates (a JSON array); no TTL
//	Pslack:install:<team>              string  nonce ‖ AES-256-GCM(install JSON, data = team); no TTL
//	Pslack:oauth-state:<nonce>         string  "1": the OAuth state was used; PX the caller's TTL
//	Pdiscord:session:<bot id>:<shard>  string  a shard's gateway session (JSON); EX 10 min;
//	                                           taken with GETDEL
//
// <bot id> is a token's public part, never the token. Every script and every command touches one
// key, so each runs on Redis Cluster with no hash tag; the two steps of Inbox.Done and the
// deletions of Installations.DeleteEnterprise are separate commands, each in its own slot.
package intake
