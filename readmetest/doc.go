// Package readmetest tests the documentation: every fenced block of every markdown file of the
// repository (README.md, docs/, the functions' and examples' READMEs, health/README.md) is run or
// validated by `go test -tags integration ./readmetest` (it runs the product's binaries), so
// documentation that drifts from the product fails `make test`; without the tag only the checks
// that every block is classified, that docs/layout.md matches the imports, and that Go comments
// cite only the repository (comments_test.go: no design document by seed number, no reference
// file outside the repository, and every docs/ page and #anchor a comment names exists) run. The
// package holds only tests; internal/testing/mdblock reads the markdown.
//
// Each block is classified by a marker, an HTML comment the reader does not see, on the last
// non-blank line before its opening fence:
//
//	<!-- readme-test: VERB ARG... -->
//
// A block without a marker fails the test. The verbs:
//
//   - run [hub] [sub:OLD=NEW...] [stdout:N=FILE...] [before="COMMANDS"] [ignore=REGEXP]: run every
//     command of a sh or console block with bash, in order, in one copy of the repository per
//     markdown file (so a block can use what an earlier block of the same file wrote), with freshly
//     built product binaries in its bin/ (first on $PATH with the go.mod's kustomize, bin/kubectl
//     and kpt). Every command must exit 0. hub: KUBECONFIG points at a real kube-apiserver with
//     OCM's CRDs (internal/testing/localhub). sub: replaces OLD by NEW in the commands before they run
//     ($TMP in NEW is a fresh temporary directory), for placeholders (PKG) and paths outside the
//     copy (/tmp/...). stdout:N=FILE: the Nth command (from 1) must print exactly the repository
//     file FILE. before: commands run first (preconditions a reader has, such as a namespace).
//     A console block's output after each "$ " command must equal what it printed (stdout and
//     stderr; trailing spaces ignored; matches of ignore replaced in both). `make build` and
//     `export PATH=$PWD/bin:$PATH` are what the test prepares itself and are not run again.
//   - check-only "REASON": commands that cannot run here (a registry push, a container engine,
//     `make test` itself): each must start with a known program, product binaries with real
//     subcommands and flags (checked against their --help), make with a real target.
//   - covered-by FILE: the commands are run literally by the test FILE (for example the migration
//     recipe by e2e/migration_test.go, which needs OCM's addon-manager); FILE must exist and name
//     this markdown file, and the commands are checked as for check-only.
//   - object: YAML objects, each parsed with the functions' strict reader (internal/krmfn: a key
//     twice, a non-string label...) and validated by kind: OCM kinds against OCM's CRD schemas
//     (internal/crdschema), core Kubernetes kinds by a server-side dry-run create with strict field
//     validation on the test hub, addonops function configs by running the function with them,
//     Argo CD Application and Flux GitRepository/OCIRepository/Kustomization by a strict decode of
//     the fields the READMEs use (no CRDs for them here), Kustomization files by a strict decode
//     into kustomize's own types, Kptfiles by a strict decode of the pipeline fields.
//   - fragment KIND [PATH]: a part of an object, embedded at PATH (a.b[0].c; none: the whole
//     object) in a minimal object of KIND, then validated as for object.
//   - same-as FILE: the block (without a first "# name" comment line) is a part of the repository
//     file FILE, line for line.
//   - lines-in PATH: every non-blank line of the block (an error message, an output) occurs in a
//     file under the repository path PATH (the golden files the tests keep current).
//   - tree DIR: a directory listing; every file and folder it names exists under DIR.
//   - diagram: a Mermaid diagram (a ```mermaid block, which GitHub draws): of a known type, its
//     brackets and quotes balanced line by line, every repository path it names existing.
//   - skip "REASON": nothing is checked. Rare: sample output of a hub in a state the text
//     describes.
//
// Inline commands in prose (`addonops ...`, `addonops-controller ...`, the functions, `make ...`)
// are checked as check-only commands are.
package readmetest
