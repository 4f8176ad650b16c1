package discordfake

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// Gateway close codes (Discord's numbers).
const (
	CloseUnknownError         = 4000
	CloseUnknownOpcode        = 4001
	CloseDecodeError          = 4002
	CloseNotAuthenticated     = 4003
	CloseAuthenticationFailed = 4004
	CloseAlreadyAuthenticated = 4005
	CloseInvalidSeq           = 4007
	CloseSessionTimedOut      = 4009
	CloseInvalidShard         = 4010
	CloseInvalidIntents       = 4013
	CloseDisallowedIntents    = 4014
)

type frame struct {
	seq int64
	raw []byte
}

type session struct {
	id      string
	seq     int64
	log     []frame
	conn    *conn
	intents int
	shard   int // shard id (0 unsharded)
}

type conn struct {
	ws   *websocket.Conn
	wmu  sync.Mutex
	sess *session
	path string
	// serverClosed: the fake closed it, so the client's close frame is only its echo.
	serverClosed atomic.Bool
}

func (c *conn) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.writeRaw(b)
}

func (c *conn) writeRaw(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return c.ws.WriteMessage(websocket.TextMessage, b)
}

func (c *conn) closeWith(code int, reason string) {
	c.serverClosed.Store(true)
	c.wmu.Lock()
	_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(time.Second))
	c.wmu.Unlock()
	_ = c.ws.Close()
}

// Identify is one IDENTIFY the gateway accepted or refused.
type Identify struct {
	Intents int
	// Shard is the [shard_id, num_shards] pair, nil when the client did not shard.
	Shard    *[2]int
	Accepted bool
	Path     string
}

// Resume is one RESUME the gateway received.
type Resume struct {
	SessionID string
	Seq       int64
	// Path is where it arrived: "/resume/" (resume_gateway_url) or "/gw/" (the generic URL).
	Path string
	// Replayed counts the events sent again; Accepted is false when the gateway answered op 9.
	Replayed int
	Accepted bool
}

type gateway struct {
	mu          sync.Mutex
	conns       map[*conn]bool
	cur         map[int]*session // shard id → its current session
	shards      int              // num_shards of the latest IDENTIFY (1 unsharded)
	sessions    map[string]*session
	heartbeatMS int
	allowed     int // privileged intents allowed
	strict      bool
	identifies  []Identify
	resumes     []Resume
	heartbeats  int
	silent      bool // heartbeats go unacknowledged
	undelivered int
	changed     chan struct{} // closed and replaced on every connection state change
}

func (g *gateway) init() {
	g.conns = map[*conn]bool{}
	g.cur = map[int]*session{}
	g.shards = 1
	g.sessions = map[string]*session{}
	g.heartbeatMS = defaultHeartbeatMS
	g.allowed = IntentMessageContent
	g.strict = true
	g.changed = make(chan struct{})
}

func (g *gateway) notifyLocked() {
	close(g.changed)
	g.changed = make(chan struct{})
}

func (g *gateway) closeAll() {
	g.mu.Lock()
	conns := make([]*conn, 0, len(g.conns))
	for c := range g.conns {
		conns = append(conns, c)
	}
	g.mu.Unlock()
	for _, c := range conns {
		_ = c.ws.Close()
	}
}

// Dispatch sends an op 0 event of type t with data d on the current session, with the next
// sequence number. While the session has no connection the event is kept for a RESUME to
// replay; with no session at all it is lost (counted by Undelivered). Without the message
// content intent, a guild MESSAGE_CREATE that does not mention the bot arrives with empty
// content, as Discord sends it.
func (s *Server) Dispatch(t string, d map[string]any) {
	g := &s.gw
	g.mu.Lock()
	defer g.mu.Unlock()
	g.dispatchLocked(g.cur[g.shardOf(d)], t, d)
}

// dispatchLocked sends an event on sess (nil: lost).
func (g *gateway) dispatchLocked(sess *session, t string, d map[string]any) {
	if sess == nil {
		g.undelivered++
		return
	}
	if t == "MESSAGE_CREATE" && sess.intents&IntentMessageContent == 0 && d["guild_id"] != nil && !mentionsBot(d) {
		c := make(map[string]any, len(d))
		for k, v := range d {
			c[k] = v
		}
		c["content"], c["attachments"], c["embeds"] = "", []any{}, []any{}
		d = c
	}
	sess.seq++
	b, err := json.Marshal(map[string]any{"op": 0, "t": t, "s": sess.seq, "d": d})
	if err != nil {
		return
	}
	sess.log = append(sess.log, frame{seq: sess.seq, raw: b})
	if sess.conn != nil {
		_ = sess.conn.writeRaw(b)
	}
}

func mentionsBot(d map[string]any) bool {
	if c, ok := d["content"].(string); ok && (strings.Contains(c, "<@"+BotID+">") || strings.Contains(c, "<@!"+BotID+">")) {
		return true
	}
	roles, _ := d["mention_roles"].([]string)
	return slices.Contains(roles, BotRoleID)
}

// shardOf is the shard an event goes to: (guild_id >> 22) % num_shards, DMs to shard 0.
func (g *gateway) shardOf(d map[string]any) int {
	gid, _ := d["guild_id"].(string)
	if g.shards <= 1 || gid == "" {
		return 0
	}
	n, err := strconv.ParseUint(gid, 10, 64)
	if err != nil {
		return 0
	}
	return int((n >> 22) % uint64(g.shards))
}

// ShardOf is the shard Discord sends guildID's events to with shards shards.
func ShardOf(guildID string, shards int) int {
	g := gateway{shards: shards}
	return g.shardOf(map[string]any{"guild_id": guildID})
}

type payload struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d"`
}

func (s *Server) serveGateway(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("encoding") != "json" {
		http.Error(w, "encoding=json required", http.StatusBadRequest)
		return
	}
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &conn{ws: ws, path: r.URL.Path}
	g := &s.gw
	g.mu.Lock()
	g.conns[c] = true
	hb := g.heartbeatMS
	g.mu.Unlock()
	defer func() {
		s.detach(c)
		_ = ws.Close()
	}()
	if c.write(map[string]any{"op": 10, "d": map[string]any{"heartbeat_interval": hb}}) != nil {
		return
	}
	ws.SetReadLimit(1 << 20)
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			// A client closing with 1000 or 1001 ends its session, as Discord does; any other
			// close leaves it resumable.
			var ce *websocket.CloseError
			if errors.As(err, &ce) && !c.serverClosed.Load() && (ce.Code == websocket.CloseNormalClosure || ce.Code == websocket.CloseGoingAway) {
				g.mu.Lock()
				if c.sess != nil {
					delete(g.sessions, c.sess.id)
					// Ended, as op 9 false ends one: what is dispatched now is lost (Undelivered).
					if g.cur[c.sess.shard] == c.sess {
						delete(g.cur, c.sess.shard)
					}
				}
				g.mu.Unlock()
			}
			return
		}
		var p payload
		if err := json.Unmarshal(data, &p); err != nil {
			c.closeWith(CloseDecodeError, "Error while decoding payload.")
			return
		}
		switch p.Op {
		case 1:
			g.mu.Lock()
			g.heartbeats++
			silent := g.silent
			g.mu.Unlock()
			if !silent && c.write(map[string]any{"op": 11}) != nil {
				return
			}
		case 2:
			if !s.identify(c, p.D) {
				return
			}
		case 6:
			if !s.resume(c, p.D) {
				return
			}
		case 3, 4, 8:
			if c.sess == nil {
				c.closeWith(CloseNotAuthenticated, "Not authenticated.")
				return
			}
		default:
			c.closeWith(CloseUnknownOpcode, "Unknown opcode.")
			return
		}
	}
}

func (s *Server) tokenOK(t string) bool { return strings.TrimPrefix(t, "Bot ") == s.token }

func (s *Server) identify(c *conn, raw json.RawMessage) bool {
	var d struct {
		Token   string  `json:"token"`
		Intents *int    `json:"intents"`
		Shard   *[2]int `json:"shard"`
	}
	if err := json.Unmarshal(raw, &d); err != nil || d.Intents == nil {
		c.closeWith(CloseDecodeError, "Error while decoding payload.")
		return false
	}
	g := &s.gw
	g.mu.Lock()
	rec := Identify{Intents: *d.Intents, Shard: d.Shard, Path: c.path}
	switch {
	case !s.tokenOK(d.Token):
		g.identifies = append(g.identifies, rec)
		g.mu.Unlock()
		c.closeWith(CloseAuthenticationFailed, "Authentication failed.")
		return false
	case c.sess != nil:
		g.mu.Unlock()
		c.closeWith(CloseAlreadyAuthenticated, "Already authenticated.")
		return false
	case d.Shard != nil && (d.Shard[1] < 1 || d.Shard[0] < 0 || d.Shard[0] >= d.Shard[1]):
		g.identifies = append(g.identifies, rec)
		g.mu.Unlock()
		c.closeWith(CloseInvalidShard, "Invalid shard.")
		return false
	case *d.Intents < 0 || *d.Intents >= 1<<26:
		g.identifies = append(g.identifies, rec)
		g.mu.Unlock()
		c.closeWith(CloseInvalidIntents, "Invalid intent(s).")
		return false
	case *d.Intents&(IntentGuildMembers|IntentGuildPresences|IntentMessageContent)&^g.allowed != 0:
		g.identifies = append(g.identifies, rec)
		g.mu.Unlock()
		c.closeWith(CloseDisallowedIntents, "Disallowed intent(s).")
		return false
	}
	rec.Accepted = true
	g.identifies = append(g.identifies, rec)
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	sess := &session{id: hex.EncodeToString(b), intents: *d.Intents}
	g.shards = 1
	if d.Shard != nil {
		sess.shard, g.shards = d.Shard[0], d.Shard[1]
	}
	if old := g.cur[sess.shard]; old != nil && old.conn != nil && old.conn != c {
		_ = old.conn.ws.Close() // one session per shard: a new one replaces the old one
		old.conn = nil
	}
	g.sessions[sess.id] = sess
	g.cur[sess.shard] = sess
	c.sess = sess
	sess.conn = c
	g.notifyLocked()
	var mine []string
	for _, id := range s.guildIDs() {
		if g.shardOf(map[string]any{"guild_id": id}) == sess.shard {
			mine = append(mine, id)
		}
	}
	var guilds []any
	for _, id := range mine {
		guilds = append(guilds, map[string]any{"id": id, "unavailable": true})
	}
	g.mu.Unlock()

	ready := map[string]any{
		"v": 9, "user": botUser(), "session_id": sess.id, "resume_gateway_url": s.wsURL(strings.TrimSuffix(routeResumeSocket, "/")),
		"guilds": orEmpty(guilds), "application": map[string]any{"id": ApplicationID, "flags": 0},
	}
	if d.Shard != nil {
		ready["shard"] = *d.Shard
	}
	g.mu.Lock()
	g.dispatchLocked(sess, "READY", ready)
	g.mu.Unlock()
	for _, id := range mine {
		s.Dispatch("GUILD_CREATE", s.guildCreate(id))
	}
	return true
}

func (s *Server) guildIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.guilds...)
}

func (s *Server) guildCreate(id string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var chans, threads []any
	for _, c := range s.channels {
		if c.GuildID != id {
			continue
		}
		if c.Type == ChannelPublicThread {
			threads = append(threads, c.wire())
		} else {
			chans = append(chans, c.wire())
		}
	}
	return map[string]any{
		"id": id, "name": "guild " + id, "unavailable": false,
		"roles": []any{
			map[string]any{"id": id, "name": "@everyone", "permissions": "0"},
			map[string]any{"id": BotRoleID, "name": BotUsername, "managed": true, "permissions": "0", "tags": map[string]any{"bot_id": BotID}},
		},
		"channels": orEmpty(chans), "threads": orEmpty(threads), "members": []any{}, "joined_at": time.Now().UTC().Format(time.RFC3339),
	}
}

func (s *Server) resume(c *conn, raw json.RawMessage) bool {
	var d struct {
		Token     string `json:"token"`
		SessionID string `json:"session_id"`
		Seq       int64  `json:"seq"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		c.closeWith(CloseDecodeError, "Error while decoding payload.")
		return false
	}
	if !s.tokenOK(d.Token) {
		c.closeWith(CloseAuthenticationFailed, "Authentication failed.")
		return false
	}
	g := &s.gw
	g.mu.Lock()
	rec := Resume{SessionID: d.SessionID, Seq: d.Seq, Path: c.path}
	sess, ok := g.sessions[d.SessionID]
	if !ok || (g.strict && c.path != routeResumeSocket) || d.Seq > sess.seq {
		g.resumes = append(g.resumes, rec)
		g.mu.Unlock()
		return c.write(map[string]any{"op": 9, "d": false}) == nil
	}
	if sess.conn != nil && sess.conn != c {
		_ = sess.conn.ws.Close()
	}
	sess.conn = c
	c.sess = sess
	g.cur[sess.shard] = sess
	// Replay under the lock so that no new dispatch overtakes the replayed ones.
	for _, f := range sess.log {
		if f.seq > d.Seq {
			rec.Replayed++
			if c.writeRaw(f.raw) != nil {
				break
			}
		}
	}
	sess.seq++
	b, _ := json.Marshal(map[string]any{"op": 0, "t": "RESUMED", "s": sess.seq, "d": map[string]any{}})
	_ = c.writeRaw(b)
	rec.Accepted = true
	g.resumes = append(g.resumes, rec)
	g.notifyLocked()
	g.mu.Unlock()
	return true
}
