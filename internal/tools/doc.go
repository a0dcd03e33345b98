// Package tools holds the tools agents call: the Tool interface and the
// built-in tools (files confined to a per-thread workspace, write_todos,
// and bash when enabled).
//
// The built-in tools follow deepagents' names, argument names and result
// strings so prompts written for deepagents work unchanged:
//
//	ls(path)                                   list a directory
//	read_file(file_path, offset, limit)        numbered lines, like cat -n
//	write_file(file_path, content)             create or overwrite
//	edit_file(file_path, old_string, new_string, replace_all)
//	glob(pattern, path)                        "**" crosses directories
//	grep(pattern, path, glob, output_mode)     RE2 regular expressions
//	write_todos(todos)                         replaces the "todos" channel
//	bash(command)                              only when Options.Shell is set
//
// Invariants of the file tools:
//
//   - Every path is resolved inside Call.Workspace. "/notes.txt" and
//     "notes.txt" both name <workspace>/notes.txt, as in deepagents' virtual
//     filesystem; an absolute path that starts with the workspace's own host
//     path is accepted too. A path is refused when it contains a NUL byte or
//     when a ".." segment climbs above the workspace root, even if later
//     segments would come back in ("/../../etc/passwd", "a/../../b").
//   - Symbolic links are followed only when they are relative and stay
//     inside the workspace (the rule of os.Root). A link with an absolute
//     target, or one whose target climbs out, makes every path through it
//     fail, whichever component it is, the last one included.
//   - The check above gives clear error text, but it is not what guarantees
//     confinement: every open, create, mkdir and directory read goes through
//     an os.Root on the workspace, which resolves each component with
//     openat(O_NOFOLLOW) and refuses escapes at the moment of use. A link
//     created or swapped in after the check therefore still cannot lead out
//     of the workspace; the operation fails instead.
//   - Directory walks (glob, grep) neither follow nor report symlinks.
//   - Sizes are bounded: files larger than MaxFileSize are neither read nor
//     written, listings and search results stop at fixed caps and say so.
//     write_file and edit_file refuse (ErrQuotaExceeded) a write that would
//     take the regular files of the workspace over its quota
//     (Options.WorkspaceQuota, DefaultWorkspaceQuota when unset).
//   - An absolute path that reads like a host location ("/tmp/x": its first
//     directory exists on the host) is still rooted at the workspace, and
//     the answer of write_file and edit_file says so, naming the file's real
//     host path, so that the model is not led to believe it wrote the host's
//     file.
//
// The bash tool is not confined: it runs with the workspace as its working
// directory and a minimal environment, but the command can reach anything
// the server's user can. That is why Builtins includes it only on request.
// Each command runs in its own process group, and the whole group is killed
// when the command ends, times out or is cancelled, so no process outlives
// the call.
package tools
