package delivery

// Metrics counts delivery's failures. The cmd layer implements it with Prometheus counters; a
// nil Metrics in the options means no counting. Label values are short fixed words.
type Metrics interface {
	// OutboundError counts a failed outbound operation by kind: rate_limited, card_refused,
	// edit_failed, message_gone, send_failed, delete_failed, final_failed (a closing message
	// not delivered: its run is tried again), rest_failed (the rest of a long answer not
	// delivered: its run is tried again, and sends only the rest), unreachable (a closing
	// message given up because the bot can no longer write to the conversation), unrecorded (a
	// message the platform took whose record Redis never did: a replay will post it again),
	// possible_double (a message sent again by a replay that found an earlier attempt's
	// write-ahead intent and no record, on a platform that cannot recognise the resend),
	// stream_refused (a stream refused at its start or mid-answer: the run posts and edits
	// instead), stream_failed (a stream that could not start for another reason),
	// stream_append_failed (an append that failed; its text goes with the next),
	// partial_withdrawn (a message of several pieces failed part-way: the pieces posted were
	// deleted, so it is sent again whole), partial_left (such pieces could not be deleted: sent
	// again, they may show twice), file_failed (the file of a long answer refused: the rest
	// goes as messages).
	OutboundError(platform, kind string)
}

type nopMetrics struct{}

func (nopMetrics) OutboundError(string, string) {}
