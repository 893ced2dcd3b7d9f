package signin

import "strings"

// DescribeUserAgent names the browser and platform well enough for a list of devices.
func DescribeUserAgent(ua string) (browser, platform string) {
	switch {
	case strings.Contains(ua, "Edg/"):
		browser = "Edge"
	case strings.Contains(ua, "Firefox/"):
		browser = "Firefox"
	case strings.Contains(ua, "Chrome/") || strings.Contains(ua, "Chromium/"):
		browser = "Chrome"
	case strings.Contains(ua, "Safari/"):
		browser = "Safari"
	case strings.HasPrefix(ua, "node") || strings.Contains(ua, "undici"):
		browser = "Node.js"
	case ua == "":
		browser = "Unknown device"
	default:
		browser, _, _ = strings.Cut(ua, "/")
	}
	switch {
	case strings.Contains(ua, "iPhone") || strings.Contains(ua, "iPad"):
		platform = "iOS"
	case strings.Contains(ua, "Android"):
		platform = "Android"
	case strings.Contains(ua, "Mac OS X") || strings.Contains(ua, "Macintosh"):
		platform = "macOS"
	case strings.Contains(ua, "Windows"):
		platform = "Windows"
	case strings.Contains(ua, "Linux"):
		platform = "Linux"
	}
	return browser, platform
}
