package threads

import (
	"crypto/sha256"
	"encoding/hex"
)

// keyspace builds every Redis key the store uses. Keys of one conversation share the hash tag
// {conv:<hash>} so that the scripts touching several of them run on Redis Cluster. The tag holds a
// hash of the conversation key, not the key itself, because conversation keys are caller text
// that may contain braces (which would move the tag) and are of any length. The hash is 128 bits
// of SHA-256, so two conversations never share keys in practice; the thread record also stores
// the full conversation key and reads check it.
//
// Layout, with P the prefix (default "sb:"):
//
//	P{conv:H}:thread   hash    the thread record (id, conv, created, session, settings)
//	P{conv:H}:log      list    the session log, one element per turn (a JSON array of events)
//	P{conv:H}:clar     hash    the conversation's latest clarification and its state
//	Pclar:<id>         string  clarification id → conversation key (lets Take find the conv)
//	Pexpiries          zset    "<clarification id>\n<conversation key>" by due time (unix ms)
//	Ptok:<token>       string  short-token payload
//	Prun:<id>:out:<s>  string  outbound record of run <id>, step <s>
//	Prun:<id>:outcome  string  the run's final outcome
//	P{conv:H}:run:<id> hash    a run's outcome and closing result (BeginRun, FinishRun)
//	Pclaim:<key>       string  a claim (SET NX PX): "1" done, "p:<token>" pending (Intake with a token)
//	Pmark:<key>        string  a mark (SET PX)
//	P{access:H}:allow|deny  set  runtime allow and deny lists of one platform (H hashes it)
type keyspace struct {
	prefix string
}

// convTag returns the hash tag shared by all keys of one conversation.
func convTag(convKey string) string {
	sum := sha256.Sum256([]byte(convKey))
	return "{conv:" + hex.EncodeToString(sum[:16]) + "}"
}

type convKeys struct {
	thread, log, clar string
}

func (k keyspace) conv(convKey string) convKeys {
	base := k.prefix + convTag(convKey) + ":"
	return convKeys{thread: base + "thread", log: base + "log", clar: base + "clar"}
}

func (k keyspace) clarIndex(id string) string { return k.prefix + "clar:" + id }

// expiries indexes the clarifications (approvals) to expire, by due time.
func (k keyspace) expiries() string { return k.prefix + "expiries" }

func (k keyspace) token(tok string) string { return k.prefix + "tok:" + tok }

func (k keyspace) outbound(runID, step string) string {
	return k.prefix + "run:" + runID + ":out:" + step
}

func (k keyspace) outcome(runID string) string { return k.prefix + "run:" + runID + ":outcome" }

// run is the record of one run of the conversation (outcome and result); it shares the
// conversation's hash tag so one script can append the run's turn and record its end together.
func (k keyspace) run(convKey, runID string) string {
	return k.prefix + convTag(convKey) + ":run:" + runID
}

func (k keyspace) claim(key string) string { return k.prefix + "claim:" + key }

func (k keyspace) mark(key string) string { return k.prefix + "mark:" + key }

// accessKeys are the allow and deny sets of one platform; they share a hash tag so one MULTI
// updates both on Redis Cluster.
func (k keyspace) access(platform string) (allow, deny string) {
	sum := sha256.Sum256([]byte(platform))
	base := k.prefix + "{access:" + hex.EncodeToString(sum[:8]) + "}:"
	return base + "allow", base + "deny"
}
