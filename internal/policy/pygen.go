package policy

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// The file and SQL tools act inside the sandbox: their handlers generate a
// small Python program. User-controlled values never touch the program
// text: they travel as JSON, base64-encoded into a string literal, and are
// decoded by the program. The program re-checks the path rules on the
// symlink-resolved path (os.path.realpath) and reports a refusal as one
// stderr line "AIRLOCK_POLICY <rule>: <message>" with exit code 3, which
// the caller turns into a rejected result (see ParseMarker). The whole program is one
// function that deletes itself, so a session's namespace is not polluted.

// policyMarker starts the stderr line of an in-sandbox refusal.
const policyMarker = "AIRLOCK_POLICY "

// MarkerExitCode is the exit code of a generated program that refused a
// path inside the sandbox; its stderr then holds the marker line.
const MarkerExitCode = 3

// Program is the body of one generated file or SQL tool program.
type Program string

// The generated tool programs.
const (
	// ReadFileProgram reads P["path"] (offset and limit in lines).
	ReadFileProgram Program = pyReadFile
	// WriteFileProgram writes or appends P["content"] to P["path"].
	WriteFileProgram Program = pyWriteFile
	// ListDirProgram lists P["path"].
	ListDirProgram Program = pyListDir
	// SQLiteProgram runs one read-only P["query"] on P["database"].
	SQLiteProgram Program = pySQLite
)

// pyPrelude opens the program: decoding the parameters and the helpers
// shared by all file tools. %s is the base64 JSON of the parameters.
const pyPrelude = `def __airlock_tool():
    import base64, fnmatch, json, os, sys
    P = json.loads(base64.b64decode("%s").decode("utf-8"))

    def refuse(rule, msg):
        sys.stdout.flush()
        sys.stderr.write("` + policyMarker + `%%s: %%s\n" %% (rule, msg))
        sys.stderr.flush()
        raise SystemExit(3)

    def inside(p, root):
        root = root.rstrip("/") or "/"
        return root == "/" or p == root or p.startswith(root + "/")

    def secret_hit(p):
        if not P["check_secrets"]:
            return ""
        low = p.lower()
        base = low.rsplit("/", 1)[-1]
        for g in P["secret_names"]:
            if fnmatch.fnmatchcase(base, g):
                return g
        parts = low.split("/")
        for d in P["secret_dirs"]:
            if d in parts:
                return d + "/"
        for g in P["secret_paths"]:
            if fnmatch.fnmatchcase(low, g):
                return g
        return ""

    def resolve(p, write):
        full = os.path.normpath(os.path.join(P["base"], p))
        real = os.path.realpath(full)
        for cand in (full, real):
            hit = secret_hit(cand)
            if hit:
                refuse("` + RulePathSecret + `", "path %%r resolves to %%r, which matches the protected pattern %%r" %% (p, cand, hit))
        roots = [P["work"]] if write else [P["work"], P["inputs"]]
        if not any(inside(real, os.path.realpath(r)) for r in roots):
            rule = "` + RulePathWriteOutside + `" if write else "` + RulePathReadOutside + `"
            refuse(rule, "path %%r resolves (through symlinks) to %%r, outside %%s" %% (p, real, " and ".join(roots)))
        return real

`

// pyEpilogue runs the function and removes it.
const pyEpilogue = `
try:
    __airlock_tool()
finally:
    del __airlock_tool
`

// pyReadFile is the body of read_file.
const pyReadFile = `    path = resolve(P["path"], False)
    if os.path.isdir(path):
        sys.stderr.write("%r is a folder; use list_directory\n" % P["path"])
        raise SystemExit(1)
    if not os.path.exists(path):
        sys.stderr.write("no such file: %r\n" % P["path"])
        raise SystemExit(1)
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(8192)
    if b"\0" in head:
        print("binary file, %d bytes; use run_python to inspect it" % size)
        return
    offset, limit, max_bytes = P["offset"], P["limit"], P["max_bytes"]
    shown, used, more = 0, 0, False
    out = sys.stdout
    with open(path, "r", encoding="utf-8", errors="replace", newline="") as f:
        for n, line in enumerate(f):
            if n < offset:
                continue
            if shown >= limit or used + len(line) > max_bytes:
                more = True
                break
            out.write(line)
            shown += 1
            used += len(line)
    if shown and not line.endswith("\n"):
        out.write("\n")
    if more:
        out.write("[airlock: showed lines %d-%d of a longer file (%d bytes); call again with offset=%d]\n" % (offset + 1, offset + shown, size, offset + shown))
    elif shown == 0:
        out.write("[airlock: no lines at offset %d (file has %d bytes)]\n" % (offset, size))
`

// pyWriteFile is the body of write_file.
const pyWriteFile = `    path = resolve(P["path"], True)
    if os.path.isdir(path):
        sys.stderr.write("%r is a folder\n" % P["path"])
        raise SystemExit(1)
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    resolve(parent, True)
    data = P["content"].encode("utf-8")
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    flags |= os.O_APPEND if P["mode"] == "append" else os.O_TRUNC
    fd = os.open(path, flags, 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    print("%s %d bytes to %s" % ("appended" if P["mode"] == "append" else "wrote", len(data), path))
`

// pyListDir is the body of list_directory.
const pyListDir = `    root = resolve(P["path"], False)
    if not os.path.isdir(root):
        sys.stderr.write("not a folder: %r\n" % P["path"])
        raise SystemExit(1)
    limit, n, more = P["max_entries"], 0, False
    def describe(full, rel):
        if os.path.islink(full):
            return "link  %s -> %s" % (rel, os.readlink(full))
        if os.path.isdir(full):
            return "dir   %s/" % rel
        try:
            return "file  %s (%d bytes)" % (rel, os.path.getsize(full))
        except OSError:
            return "other %s" % rel
    print("%s:" % root)
    if P["recursive"]:
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            dirnames.sort()
            for name in dirnames + sorted(filenames):
                full = os.path.join(dirpath, name)
                if n >= limit:
                    more = True
                    break
                print(describe(full, os.path.relpath(full, root)))
                n += 1
            if more:
                break
    else:
        for name in sorted(os.listdir(root)):
            if n >= limit:
                more = True
                break
            print(describe(os.path.join(root, name), name))
            n += 1
    if more:
        print("[airlock: stopped at %d entries; raise max_entries or list a subfolder]" % limit)
    elif n == 0:
        print("(empty)")
`

// pySQLite is the body of sqlite_query: read-only by the engine (mode=ro,
// PRAGMA query_only, an authorizer refusing writes, ATTACH and
// non-introspection pragmas) and one statement only (cursor.execute).
const pySQLite = `    import sqlite3, urllib.parse
    db = resolve(P["database"], False)
    if not os.path.isfile(db):
        sys.stderr.write("no such database file: %r\n" % P["database"])
        raise SystemExit(1)
    uri = "file:" + urllib.parse.quote(db) + "?mode=ro"
    try:
        con = sqlite3.connect(uri, uri=True)
        con.execute("PRAGMA query_only=ON")
    except sqlite3.OperationalError:
        con = sqlite3.connect(uri + "&immutable=1", uri=True)
        con.execute("PRAGMA query_only=ON")
    arg_pragmas, plain_pragmas = set(P["arg_pragmas"]), set(P["plain_pragmas"])
    def authorizer(action, arg1, arg2, dbname, source):
        if action in (sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, getattr(sqlite3, "SQLITE_RECURSIVE", 33)):
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_PRAGMA:
            name = (arg1 or "").lower()
            if name in arg_pragmas or (name in plain_pragmas and arg2 is None):
                return sqlite3.SQLITE_OK
        return sqlite3.SQLITE_DENY
    con.set_authorizer(authorizer)
    cur = con.cursor()
    try:
        cur.execute(P["query"])
    except (sqlite3.Warning, sqlite3.ProgrammingError) as e:
        if "one statement" in str(e):
            refuse("` + RuleSQLMultiple + `", "sqlite_query runs exactly one statement")
        raise
    except sqlite3.DatabaseError as e:
        if "not authorized" in str(e):
            refuse("` + RuleSQLReadOnly + `", "the database is opened read-only: only SELECT, WITH and introspection PRAGMAs run (%s)" % e)
        raise
    if cur.description is None:
        print("(statement returned no rows)")
        return
    cols = [d[0] for d in cur.description]
    def cell(v):
        if v is None:
            return "NULL"
        if isinstance(v, bytes):
            return "<blob %d bytes>" % len(v)
        return str(v).replace("\t", " ").replace("\n", " ")
    print("\t".join(cols))
    rows = cur.fetchmany(P["max_rows"] + 1)
    for r in rows[:P["max_rows"]]:
        print("\t".join(cell(v) for v in r))
    if len(rows) > P["max_rows"]:
        print("[airlock: stopped at %d rows; raise max_rows or add LIMIT/aggregation]" % P["max_rows"])
    else:
        print("(%d rows)" % len(rows))
`

// Introspection pragmas sqlite_query allows: with a table/index argument,
// and read-only ones that must not be given a value.
var (
	sqliteArgPragmas   = []string{"table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo", "foreign_key_list"}
	sqlitePlainPragmas = []string{"database_list", "collation_list", "function_list", "compile_options", "user_version", "schema_version", "page_count", "page_size", "encoding"}
)

// GenPython builds the program for body with params (plus the folder
// layout and the path-rule data; SQLiteProgram also gets the allowed
// pragmas). base is where relative paths start. It returns an error only if
// params cannot be encoded. User values travel only inside params.
func (p *Analyzer) GenPython(body Program, params map[string]any, base string) (string, error) {
	all := map[string]any{
		"base":          base,
		"work":          p.cfg.WorkDir,
		"inputs":        p.cfg.InputDir,
		"check_secrets": p.On(RulePathSecret),
		"secret_names":  secretNames,
		"secret_dirs":   secretDirs,
		"secret_paths":  secretPaths,
	}
	if body == SQLiteProgram {
		all["arg_pragmas"], all["plain_pragmas"] = sqliteArgPragmas, sqlitePlainPragmas
	}
	for k, v := range params {
		all[k] = v
	}
	js, err := json.Marshal(all)
	if err != nil {
		return "", fmt.Errorf("policy: encode tool parameters: %w", err)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, pyPrelude, base64.StdEncoding.EncodeToString(js))
	sb.WriteString(string(body))
	sb.WriteString(pyEpilogue)
	return sb.String(), nil
}

// ParseMarker finds an in-sandbox refusal line in stderr and returns its
// rule and message.
func ParseMarker(stderr string) (rule, msg string, ok bool) {
	for _, line := range strings.Split(stderr, "\n") {
		if rest, found := strings.CutPrefix(line, policyMarker); found {
			rule, msg, _ = strings.Cut(rest, ": ")
			if rule != "" && !strings.ContainsAny(rule, " \t") {
				return rule, msg, true
			}
		}
	}
	return "", "", false
}
