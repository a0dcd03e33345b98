// Package mcptools makes the tools of Model Context Protocol servers
// usable as agent tools. An agent spec lists its servers (stdio commands,
// streamable HTTP or SSE endpoints); a Pool owns one client session per
// distinct server configuration, shared by every agent that lists it.
//
// Invariants:
//   - A session is opened on first use, reused by every call, and opened
//     again when it died (the process exited, the connection dropped); a
//     call that found its session dead is retried once on a new one.
//   - Every call is bounded by the server's timeout, and the run's
//     cancellation reaches the server (the SDK sends
//     notifications/cancelled).
//   - Stdio processes belong to the Pool: Close stops every one of them,
//     and a Pool that was closed opens no new session. Use records which
//     entries each graph's spec lists; a session no spec lists any more is
//     closed (and reopened only if an old agent still calls it).
//   - Tool names are "<server>_<tool>", reduced to the characters chat
//     model APIs accept; the remote name is what the server is called
//     with.
package mcptools
