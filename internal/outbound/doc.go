// Package outbound owns everything between a domain change and a message
// provider: the SMS fraud guard (Guard), the message templates and the apps'
// overrides of them (Templates), sealing and the durable send queue with its
// worker (Queue, Worker), and the apps' own providers with the routing of
// every message to the right one (Providers). Domain packages ask it to
// guard a recipient before they store anything, and to send a message
// inside the transaction of the change that causes it; the worker sends it
// after commit. courier, below it, holds the provider adapters and the
// built-in templates.
package outbound

import (
	"strings"

	"github.com/gatehouse-auth/gatehouse/internal/courier"
)

// channelOf is the channel that reaches addr, a normalised e-mail address or
// E.164 number: only an address has an "@".
func channelOf(addr string) courier.Channel {
	if strings.Contains(addr, "@") {
		return courier.ChannelEmail
	}
	return courier.ChannelSMS
}
