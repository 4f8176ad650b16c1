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

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

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

// gateway is the gateway websocket: connections, the sessions they identify or resume (one per
// shard), the events dispatched on them and the log of what clients sent.
type gateway struct {
	token string
	wsURL func(path string) string
	// chans are the guilds READY lists and GUILD_CREATE announces.
	chans *channels

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

func newGateway(token string, wsURL func(path string) string) *gateway {
	return &gateway{
		token:       token,
		wsURL:       wsURL,
		conns:       map[*conn]bool{},
		cur:         map[int]*session{},
		shards:      1,
		sessions:    map[string]*session{},
		heartbeatMS: defaultHeartbeatMS,
		allowed:     IntentMessageContent,
		strict:      true,
		changed:     make(chan struct{}),
	}
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

// dispatch sends an op 0 event on the current session of the shard the event goes to
// (gatewayControl.Dispatch).
func (g *gateway) dispatch(t string, d map[string]any) {
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

// serve is a gateway connection: HELLO, then the client's payloads until it or the fake ends it.
func (g *gateway) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("encoding") != "json" {
		http.Error(w, "encoding=json required", http.StatusBadRequest)
		return
	}
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &conn{ws: ws, path: r.URL.Path}
	g.mu.Lock()
	g.conns[c] = true
	hb := g.heartbeatMS
	g.mu.Unlock()
	defer func() {
		g.detach(c)
		_ = ws.Close()
	}()
	if c.write(map[string]any{"op": 10, "d": map[string]any{"heartbeat_interval": hb}}) != nil {
		return
	}
	ws.SetReadLimit(1 << 20)
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			g.clientClosed(c, err)
			return
		}
		if !g.handle(c, data) {
			return
		}
	}
}

// clientClosed ends c's session when the client closed it with 1000 or 1001, as Discord does;
// any other close leaves it resumable.
func (g *gateway) clientClosed(c *conn, err error) {
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || c.serverClosed.Load() || (ce.Code != websocket.CloseNormalClosure && ce.Code != websocket.CloseGoingAway) {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if c.sess != nil {
		delete(g.sessions, c.sess.id)
		// Ended, as op 9 false ends one: what is dispatched now is lost (Undelivered).
		if g.cur[c.sess.shard] == c.sess {
			delete(g.cur, c.sess.shard)
		}
	}
}

// handle answers one payload of the client; it reports false when the connection is done.
func (g *gateway) handle(c *conn, data []byte) bool {
	var p payload
	if err := json.Unmarshal(data, &p); err != nil {
		c.closeWith(CloseDecodeError, "Error while decoding payload.")
		return false
	}
	switch p.Op {
	case 1:
		return g.heartbeat(c)
	case 2:
		return g.identify(c, p.D)
	case 6:
		return g.resume(c, p.D)
	case 3, 4, 8:
		if c.sess == nil {
			c.closeWith(CloseNotAuthenticated, "Not authenticated.")
			return false
		}
		return true
	default:
		c.closeWith(CloseUnknownOpcode, "Unknown opcode.")
		return false
	}
}

// heartbeat counts an op 1 and acknowledges it (op 11) unless acks are silenced.
func (g *gateway) heartbeat(c *conn) bool {
	g.mu.Lock()
	g.heartbeats++
	silent := g.silent
	g.mu.Unlock()
	return silent || c.write(map[string]any{"op": 11}) == nil
}

func (g *gateway) tokenOK(t string) bool { return strings.TrimPrefix(t, "Bot ") == g.token }

// identifyData is an IDENTIFY's d.
type identifyData struct {
	Token   string  `json:"token"`
	Intents *int    `json:"intents"`
	Shard   *[2]int `json:"shard"`
}

// identify answers an IDENTIFY: a close for one Discord refuses, else a new session, READY and
// a GUILD_CREATE for each of the shard's guilds.
func (g *gateway) identify(c *conn, raw json.RawMessage) bool {
	var d identifyData
	if err := json.Unmarshal(raw, &d); err != nil || d.Intents == nil {
		c.closeWith(CloseDecodeError, "Error while decoding payload.")
		return false
	}
	g.mu.Lock()
	if code, reason := g.admitLocked(c, d); code != 0 {
		g.mu.Unlock()
		c.closeWith(code, reason)
		return false
	}
	sess := g.openLocked(c, d)
	mine := g.guildsOfLocked(sess.shard)
	g.mu.Unlock()
	g.ready(sess, d.Shard, mine)
	return true
}

// admitLocked checks an IDENTIFY on c as Discord does (the token, a session already there, the
// shard, the intents and which privileged ones are allowed) and records it (Identifies) unless c
// already has a session; it returns the close code and reason of a refusal, 0 when accepted.
func (g *gateway) admitLocked(c *conn, d identifyData) (code int, reason string) {
	rec := Identify{Intents: *d.Intents, Shard: d.Shard, Path: c.path}
	switch {
	case !g.tokenOK(d.Token):
		code, reason = CloseAuthenticationFailed, "Authentication failed."
	case c.sess != nil:
		return CloseAlreadyAuthenticated, "Already authenticated."
	case d.Shard != nil && (d.Shard[1] < 1 || d.Shard[0] < 0 || d.Shard[0] >= d.Shard[1]):
		code, reason = CloseInvalidShard, "Invalid shard."
	case *d.Intents < 0 || *d.Intents >= 1<<26:
		code, reason = CloseInvalidIntents, "Invalid intent(s)."
	case *d.Intents&(IntentGuildMembers|IntentGuildPresences|IntentMessageContent)&^g.allowed != 0:
		code, reason = CloseDisallowedIntents, "Disallowed intent(s)."
	}
	rec.Accepted = code == 0
	g.identifies = append(g.identifies, rec)
	return code, reason
}

// openLocked starts the session an accepted IDENTIFY on c asked for; it replaces the shard's
// current one.
func (g *gateway) openLocked(c *conn, d identifyData) *session {
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
	return sess
}

// guildsOfLocked are the guilds whose events go to shard.
func (g *gateway) guildsOfLocked(shard int) []string {
	var mine []string
	for _, id := range g.chans.guildIDs() {
		if g.shardOf(map[string]any{"guild_id": id}) == shard {
			mine = append(mine, id)
		}
	}
	return mine
}

// ready dispatches READY on sess, listing guilds as unavailable, then a GUILD_CREATE for each.
func (g *gateway) ready(sess *session, shard *[2]int, guilds []string) {
	var unavailable []any
	for _, id := range guilds {
		unavailable = append(unavailable, map[string]any{"id": id, "unavailable": true})
	}
	ready := map[string]any{
		"v": 9, "user": botUser(), "session_id": sess.id, "resume_gateway_url": g.wsURL(strings.TrimSuffix(routeResumeSocket, "/")),
		"guilds": orEmpty(unavailable), "application": map[string]any{"id": ApplicationID, "flags": 0},
	}
	if shard != nil {
		ready["shard"] = *shard
	}
	g.mu.Lock()
	g.dispatchLocked(sess, "READY", ready)
	g.mu.Unlock()
	for _, id := range guilds {
		g.dispatch("GUILD_CREATE", g.chans.guildCreate(id))
	}
}

func (g *gateway) resume(c *conn, raw json.RawMessage) bool {
	var d struct {
		Token     string `json:"token"`
		SessionID string `json:"session_id"`
		Seq       int64  `json:"seq"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		c.closeWith(CloseDecodeError, "Error while decoding payload.")
		return false
	}
	if !g.tokenOK(d.Token) {
		c.closeWith(CloseAuthenticationFailed, "Authentication failed.")
		return false
	}
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

// connectedLocked reports whether every shard has a session with a live connection.
func (g *gateway) connectedLocked() bool {
	if len(g.cur) < g.shards {
		return false
	}
	for _, sess := range g.cur {
		if sess.conn == nil {
			return false
		}
	}
	return len(g.cur) > 0
}

// current returns the live connection of shard 0's session, if any.
func (g *gateway) current() *conn { return g.currentShard(0) }

func (g *gateway) currentShard(i int) *conn {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cur[i] == nil {
		return nil
	}
	return g.cur[i].conn
}

// detach forgets c, a connection that ended; its session stays, without a connection.
func (g *gateway) detach(c *conn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.conns, c)
	if c.sess != nil && c.sess.conn == c {
		c.sess.conn = nil
	}
	g.notifyLocked()
}
