package addonstatus

import "unicode/utf8"

// MaxMessage is the most bytes of a condition message the controller keeps or writes: the hub
// cache cuts longer messages of ManagedClusterAddOns and ManifestWorks (a managed cluster writes
// their status, and the API server allows 32 KiB per message), and the controller cuts its own to
// the same length, so what it computes is what the cache shows after it is written (a message cut
// only by the cache would look changed at every decision, and be written again).
const MaxMessage = 2048

// truncatedSuffix ends a cut message.
const truncatedSuffix = " … [truncated]"

// BoundMessage returns msg cut to at most MaxMessage bytes (on a UTF-8 character boundary, ending
// with " … [truncated]"); msg itself when it is not longer. Cutting a cut message changes nothing.
func BoundMessage(msg string) string {
	if len(msg) <= MaxMessage {
		return msg
	}
	cut := MaxMessage - len(truncatedSuffix)
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + truncatedSuffix
}
