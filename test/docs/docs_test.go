// Package docs keeps the documentation true to the code: every reason a
// BackupJob or RestoreJob can carry and every alert the driver chart ships
// has a runbook section, every manager flag is on the configuration page,
// and every relative link in README.md and docs/ resolves. Plain Go tests:
// they read files, parse Go source and register flags, nothing more.
package docs

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manager"
)

// root is the repository, two levels up from this package.
const root = "../.."

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// reasonKinds maps each file of api/ that declares reasons to the kind
// whose status shows them: a reason V of kind K needs the runbook anchor
// K-v (a heading "K `V`" or an <a id> in a table). A new file with reasons
// must be added here, so no reason goes undocumented by being elsewhere.
var reasonKinds = map[string]string{
	"backups/v1alpha1/restore_conditions.go":       "restorejob",
	"backups/v1alpha1/backupjob_conditions.go":     "backupjob",
	"backups/v1alpha1/backup_conditions.go":        "backup",
	"backups/v1alpha1/plan_conditions.go":          "plan",
	"strategy/v1alpha1/etcd_conditions.go":         "etcd-strategy",
	"driver/v1alpha1/strategypolicy_conditions.go": "strategypolicy",
	"driver/v1alpha1/captureprogress_types.go":     "captureprogress",
}

// peerAPIs are the folders of api/ that copy another project's types
// (the etcd-operator's, Kamaji's): their reasons are that project's to
// document; the driver's own reasons for what it reads of them
// (BootstrapFailed, DeadlineExceeded, …) are RestoreJob reasons.
var peerAPIs = map[string]bool{"etcdoperator": true, "kamaji": true}

// successes are the reasons that say all is well and need no section.
var successes = map[string]bool{
	"ProvenanceVerified":  true, // Backup Verified=True
	"Inspected":           true, // Backup Inspected=True
	"ContentKept":         true, // Backup ContentDrop=False
	"ScheduleValid":       true, // Plan Error=False
	"JobCreated":          true, // Plan Scheduled=True
	"PolicyValid":         true, // Plan PolicyValid=True
	"CredentialsIsolated": true, // Etcd strategy SharedCredentials=False
	"Accepted":            true, // StrategyPolicy Valid=True
	"SettingsAgree":       true, // StrategyPolicy Migrated=True
	"Following":           true, // CaptureProgress Capturing=True
}

// reasonName matches the name of a reason constant: BackupReasonX,
// PlanReasonX, EtcdReasonX, ReasonX.
var reasonName = regexp.MustCompile(`(^|[a-z])Reason[A-Z]`)

// reasonConst is one reason constant found in api/.
type reasonConst struct{ kind, value, where string }

// reasonConstants returns every reason constant declared in api/ (typed
// RestoreReason, or named *Reason*), parsed from source so that a new
// constant is seen without anyone listing it here. A reason in a file
// reasonKinds does not name is reported as an error.
func reasonConstants(t *testing.T) []reasonConst {
	t.Helper()
	var out []reasonConst
	apiDir := filepath.Join(root, "api")
	err := filepath.WalkDir(apiDir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(apiDir, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if peerAPIs[rel] {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") || strings.HasPrefix(d.Name(), "zz_generated") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				typed := false
				if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "RestoreReason" {
					typed = true
				}
				for i, name := range vs.Names {
					if i >= len(vs.Values) || !(typed || reasonName.MatchString(name.Name)) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						return err
					}
					kind, ok := reasonKinds[rel]
					if !ok {
						t.Errorf("api/%s declares reason %s = %q but is not in reasonKinds: say whose status shows it", rel, name.Name, v)
						continue
					}
					out = append(out, reasonConst{kind: kind, value: v, where: "api/" + rel + ": " + name.Name})
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]int{}
	for _, r := range out {
		found[r.kind]++
	}
	for _, kind := range reasonKinds {
		if found[kind] == 0 {
			t.Fatalf("found no %s reason; the parser no longer matches api/ (found %v)", kind, found)
		}
	}
	return out
}

// TestEveryReasonHasARunbookSection: every reason constant in api/ that
// is not a success (a RestoreJob's, BackupJob's, Backup's, Plan's or Etcd
// strategy's) has a runbook section, anchor <kind>-<reason in lower case>
// (restorejob-, backupjob-, backup-, plan-, etcd-strategy-).
func TestEveryReasonHasARunbookSection(t *testing.T) {
	anchors := anchorsOf(read(t, "docs/runbook.md"))
	for _, r := range reasonConstants(t) {
		if successes[r.value] {
			continue
		}
		if a := r.kind + "-" + strings.ToLower(r.value); !anchors[a] {
			t.Errorf("%s reason %s (%s) has no runbook section (anchor #%s in docs/runbook.md)", r.kind, r.value, r.where, a)
		}
	}
}

var (
	alertLine   = regexp.MustCompile(`(?m)^\s*- alert:\s*(\w+)\s*$`)
	runbookLine = regexp.MustCompile(`runbook_url:\s*\{\{ \$runbook \}\}#([\w-]+)`)
)

// TestEveryAlertHasARunbookSection reads the chart's PrometheusRule
// template: each alert needs a runbook section, and its runbook_url must
// point at that section.
func TestEveryAlertHasARunbookSection(t *testing.T) {
	tmpl := read(t, "charts/etcd-backup-driver/templates/prometheusrule.yaml")
	anchors := anchorsOf(read(t, "docs/runbook.md"))
	locs := alertLine.FindAllStringSubmatchIndex(tmpl, -1)
	if len(locs) == 0 {
		t.Fatal("no alerts found in the PrometheusRule template")
	}
	for i, loc := range locs {
		alert := tmpl[loc[2]:loc[3]]
		want := strings.ToLower(alert)
		if !anchors[want] {
			t.Errorf("alert %s has no runbook section (anchor #%s in docs/runbook.md)", alert, want)
		}
		end := len(tmpl)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		m := runbookLine.FindStringSubmatch(tmpl[loc[1]:end])
		switch {
		case m == nil:
			t.Errorf("alert %s has no runbook_url annotation", alert)
		case m[1] != want:
			t.Errorf("alert %s: runbook_url points at #%s, want #%s", alert, m[1], want)
		}
	}
}

// TestEveryFlagIsDocumented registers the manager's flags as the binary
// does and wants each one named on the configuration page.
func TestEveryFlagIsDocumented(t *testing.T) {
	page := read(t, "docs/configuration.md")
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	opts := manager.DefaultOptions()
	opts.BindFlags(fs)
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		if !strings.Contains(page, "`--"+f.Name+"`") {
			t.Errorf("flag --%s is missing from docs/configuration.md", f.Name)
		}
	})
	if n == 0 {
		t.Fatal("BindFlags registered no flags")
	}
	for _, c := range manager.ControllerNames() {
		if !strings.Contains(page, "`"+c+"`") {
			t.Errorf("controller %s (--disable-controllers) is missing from docs/configuration.md", c)
		}
	}
}

var (
	// [text](target), not images' sources nor reference definitions.
	mdLink  = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	htmlID  = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	fence   = regexp.MustCompile("^\\s*(```|~~~)")
)

// TestRelativeLinksResolve checks every relative link in README.md and
// docs/*.md: the file exists, and a #fragment into a Markdown file is one
// of its anchors.
func TestRelativeLinksResolve(t *testing.T) {
	files := []string{"README.md"}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		rel, _ := filepath.Rel(root, d)
		files = append(files, filepath.ToSlash(rel))
	}
	sort.Strings(files)
	for _, f := range files {
		for _, link := range linksOf(read(t, f)) {
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			path, frag, _ := strings.Cut(link, "#")
			target := f
			if path != "" {
				target = filepath.ToSlash(filepath.Join(filepath.Dir(f), path))
			}
			if _, err := os.Stat(filepath.Join(root, target)); err != nil {
				t.Errorf("%s: link %q: %s does not exist", f, link, target)
				continue
			}
			if frag == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			if !anchorsOf(read(t, target))[frag] {
				t.Errorf("%s: link %q: %s has no anchor #%s", f, link, target, frag)
			}
		}
	}
}

// linksOf returns the link targets outside code blocks and code spans.
func linksOf(md string) []string {
	var out []string
	inCode := false
	for _, line := range strings.Split(md, "\n") {
		if fence.MatchString(line) {
			inCode = !inCode
			continue
		}
		if inCode {
			continue
		}
		for _, m := range mdLink.FindAllStringSubmatch(stripCodeSpans(line), -1) {
			out = append(out, m[1])
		}
	}
	return out
}

func stripCodeSpans(line string) string {
	parts := strings.Split(line, "`")
	var b strings.Builder
	for i, p := range parts {
		if i%2 == 0 {
			b.WriteString(p)
		}
	}
	return b.String()
}

// anchorsOf returns the anchors GitHub gives a Markdown file: one per
// heading (duplicates numbered -1, -2, ...) and any explicit <a id>.
func anchorsOf(md string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	inCode := false
	for _, line := range strings.Split(md, "\n") {
		if fence.MatchString(line) {
			inCode = !inCode
			continue
		}
		if inCode {
			continue
		}
		for _, m := range htmlID.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		a := slug(m[2])
		if n := seen[a]; n > 0 {
			anchors[a+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

// slug is GitHub's heading anchor: lower case, punctuation other than '-'
// and '_' dropped, spaces turned into '-'.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_':
			b.WriteRune(r)
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r > 127 && isLetter(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isLetter(r rune) bool { return strings.ToUpper(string(r)) != strings.ToLower(string(r)) }
