package collectors

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

const (
	ldSoConf = "/etc/ld.so.conf"
	// maxLdSoConfFiles bounds include chains; ldconfig itself has no guard.
	maxLdSoConfFiles = 256
)

// defaultLibraryDirs are searched whatever ld.so.conf says: the trusted
// directories and the multiarch ones of Debian (x86_64, aarch64) and of
// NVIDIA's sbsa packages.
var defaultLibraryDirs = []string{
	"/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib",
	"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib/sbsa-linux-gnu",
}

// offLoaderPathGlobs are library directories that jobs reach through
// LD_LIBRARY_PATH or an rpath rather than the loader's configuration.
var offLoaderPathGlobs = []string{
	"usr/local/cuda*/lib64",
	"usr/local/cuda*/targets/*/lib",
	"opt/conda/lib",
	// aws-ofi-nccl, the NCCL net plugin for EFA, as the EFA installer and
	// the Deep Learning AMIs lay it out; jobs reach it by LD_LIBRARY_PATH.
	// Debian-family packages and AMIs use a multiarch subdirectory.
	"opt/amazon/ofi-nccl/lib",
	"opt/amazon/ofi-nccl/lib/x86_64-linux-gnu",
	"opt/amazon/ofi-nccl/lib/aarch64-linux-gnu",
	"opt/amazon/ofi-nccl/lib64",
	"opt/aws-ofi-nccl/lib",
	"opt/aws-ofi-nccl/lib/x86_64-linux-gnu",
	"opt/aws-ofi-nccl/lib/aarch64-linux-gnu",
}

// sitePackagesGlobs are the Python package directories searched for wheels:
// system and pip-installed Pythons, conda, and virtual environments one or
// two levels under /opt. Never a walk of the whole disk.
var sitePackagesGlobs = []string{
	"usr/lib/python3*/site-packages",
	"usr/lib/python3*/dist-packages",
	"usr/lib64/python3*/site-packages",
	"usr/local/lib/python3*/site-packages",
	"usr/local/lib/python3*/dist-packages",
	"usr/local/lib64/python3*/site-packages",
	"opt/conda/lib/python3*/site-packages",
	"opt/conda/envs/*/lib/python3*/site-packages",
	"opt/*/lib/python3*/site-packages",
	"opt/*/*/lib/python3*/site-packages",
}

var (
	ncclFileName   = regexp.MustCompile(`^libnccl\.so(?:\.\d+)*$`)
	cudartFileName = regexp.MustCompile(`^libcudart\.so(?:\.\d+)*$`)
	nvmlFileName   = regexp.MustCompile(`^libnvidia-ml\.so\.(\d+\.\d+(?:\.\d+)*)$`)
	// NCCL net plugins: NCCL dlopens libnccl-net.so or, with NCCL_NET_PLUGIN=x,
	// libnccl-net-x.so (aws-ofi-nccl installs libnccl-net-ofi.so too).
	ncclNetFileName = regexp.MustCompile(`^libnccl-net(?:-[A-Za-z0-9_.+-]+?)?\.so(?:\.\d+)*$`)
	// rdma-core names libibverbs libibverbs.so.1.<ABI>.<PACKAGE_VERSION>
	// (libibverbs/CMakeLists.txt, Documentation/versioning.md): the last
	// parts are the rdma-core release, libibverbs.so.1.14.50.0 is 50.0.
	verbsFileName = regexp.MustCompile(`^libibverbs\.so(?:\.\d+)*(?:\.[0-9A-Za-z]+)*$`)
	verbsRelease  = regexp.MustCompile(`^libibverbs\.so\.1\.\d+\.(\d+(?:\.\d+)?)$`)
	// Wheel names as their .dist-info directories spell them (lower-cased):
	// nvidia-nccl-cu12 is nvidia_nccl_cu12-2.20.5.dist-info.
	ncclDistInfo   = regexp.MustCompile(`^nvidia_nccl(?:_cu\d+)?-[^-]+\.dist-info$`)
	cudartDistInfo = regexp.MustCompile(`^nvidia_cuda_runtime(?:_cu\d+)?-[^-]+\.dist-info$`)
)

// libraryFamily is what tells one library's files and wheels apart.
type libraryFamily struct {
	prefix   string // "libnccl.so"
	fileName *regexp.Regexp
	// fullParts is how many version parts a file name needs to name the
	// release; NCCL's soname carries only the major.
	fullParts int
	embedded  bool
	// wheelLib is where the wheel keeps the library, for a RECORD-less install.
	wheelLib string
}

var (
	ncclFamily   = libraryFamily{prefix: "libnccl.so", fileName: ncclFileName, fullParts: 3, embedded: true, wheelLib: "nvidia/nccl/lib/libnccl.so.2"}
	cudartFamily = libraryFamily{prefix: "libcudart.so", fileName: cudartFileName, fullParts: 1}
)

// libraryScan gathers every NCCL, CUDA runtime and NVML copy of one host.
type libraryScan struct {
	c        *collection
	seen     map[string]bool // real paths already reported
	seenDirs map[string]bool
	nccl     []snapshot.Library
	cuda     []snapshot.Library
	ncclNet  []snapshot.Library
	verbs    []snapshot.Library
	// netVia is, for a net plugin, the setting that put its directory on
	// the loader's path (ld.so.conf line, LD_LIBRARY_PATH, NCCL_NET_PLUGIN).
	netVia    map[string]snapshot.Provenance
	dirVia    snapshot.Provenance
	nvml      map[string]bool
	nvmlFiles []string
}

func collectLibraries(c *collection) {
	s := &libraryScan{c: c, seen: map[string]bool{}, seenDirs: map[string]bool{}, nvml: map[string]bool{}, netVia: map[string]snapshot.Provenance{}}
	// Wheels first: they claim their library files, whose dist-info version
	// is better than a scan, even when a loader directory also lists them.
	for _, dir := range s.globDirs(sitePackagesGlobs) {
		s.scanSitePackages(dir)
	}
	for _, dir := range defaultLibraryDirs {
		s.scanLibraryDir(dir, "system")
	}
	for _, d := range s.ldSoConfDirs() {
		s.dirVia = c.at(d.file, d.line)
		s.scanLibraryDir(d.dir, "system")
	}
	s.dirVia = snapshot.Provenance{}
	// dlopen searches LD_LIBRARY_PATH before the cache; its directories are
	// not the loader's configuration, so "other" unless already seen.
	if lp := c.loginLibraryPath; lp.file != "" {
		s.dirVia = c.at(lp.file, lp.line)
		for _, dir := range strings.Split(lp.value, ":") {
			// ld.so: an empty entry is the working directory, unknown here.
			if strings.HasPrefix(dir, "/") {
				s.scanLibraryDir(dir, "other")
			}
		}
		s.dirVia = snapshot.Provenance{}
	}
	s.netPluginPath()
	for _, dir := range s.globDirs(offLoaderPathGlobs) {
		s.scanLibraryDir(dir, "other")
	}

	libs := &c.snap.Libraries
	libs.NCCL, libs.CUDA = sortLibraries(s.nccl), sortLibraries(s.cuda)
	libs.NCCLNet, libs.Verbs = sortLibraries(s.ncclNet), sortLibraries(s.verbs)
	for fact, list := range map[string][]snapshot.Library{
		"libraries.nccl": libs.NCCL, "libraries.cuda": libs.CUDA,
		"libraries.nccl_net": libs.NCCLNet, "libraries.verbs": libs.Verbs,
	} {
		var where []snapshot.Provenance
		for _, l := range list {
			where = append(where, l.Source)
			if via, ok := s.netVia[l.Path]; ok && fact == "libraries.nccl_net" {
				where = append(where, via)
			}
		}
		c.fromAll(fact, where)
	}

	versions := make([]string, 0, len(s.nvml))
	for v := range s.nvml {
		versions = append(versions, v)
	}
	slices.SortFunc(versions, compareDottedVersions)
	c.snap.NVIDIA.NVMLVersions = versions
	if len(s.nvmlFiles) > 0 {
		var where []snapshot.Provenance
		for _, f := range s.nvmlFiles {
			where = append(where, c.at(f, 0))
		}
		c.fromAll("nvidia.nvml_versions", where)
	}
}

func sortLibraries(libs []snapshot.Library) []snapshot.Library {
	if libs == nil {
		return []snapshot.Library{}
	}
	slices.SortFunc(libs, func(a, b snapshot.Library) int {
		if d := compareDottedVersions(a.Version, b.Version); d != 0 {
			return d
		}
		return strings.Compare(a.Path, b.Path)
	})
	return libs
}

// globDirs expands patterns (io/fs syntax, relative to the root) in order.
func (s *libraryScan) globDirs(patterns []string) []string {
	var dirs []string
	for _, p := range patterns {
		matches, _ := fs.Glob(s.c.src, p) // only ErrBadPattern, and these are constant
		for _, m := range matches {
			dirs = append(dirs, "/"+m)
		}
	}
	return dirs
}

// realDir resolves dir once per scan: the same directory reached through a
// link or listed twice is read once. Missing directories are skipped.
func (s *libraryScan) realDir(dir string) (string, bool) {
	real, err := RealPath(s.c.src, dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.c.fail("libraries", dir, err)
		}
		return "", false
	}
	if s.seenDirs[real] {
		return "", false
	}
	s.seenDirs[real] = true
	return real, true
}

// realFile resolves a library's links to the file itself, once per scan.
func (s *libraryScan) realFile(name string) (string, bool) {
	real, err := RealPath(s.c.src, name)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) { // a dangling link is no library
			s.c.fail("libraries", name, err)
		}
		return "", false
	}
	if s.seen[real] {
		return "", false
	}
	info, err := s.c.src.Stat(rel(real))
	if err != nil || !info.Mode().IsRegular() {
		return "", false
	}
	s.seen[real] = true
	return real, true
}

func (s *libraryScan) scanLibraryDir(dir, kind string) {
	real, ok := s.realDir(dir)
	if !ok {
		return
	}
	for _, e := range s.c.readDir("libraries", real) {
		name := e.Name()
		switch {
		case nvmlFileName.MatchString(name):
			s.addNVML(real+"/"+name, nvmlFileName.FindStringSubmatch(name)[1])
		case ncclFileName.MatchString(name):
			s.addLibraryFile(&s.nccl, ncclFamily, real+"/"+name, kind)
		case cudartFileName.MatchString(name):
			s.addLibraryFile(&s.cuda, cudartFamily, real+"/"+name, kind)
		case ncclNetFileName.MatchString(name):
			s.addNetPlugin(real+"/"+name, kind)
		case verbsFileName.MatchString(name):
			s.addNamedFile(&s.verbs, real+"/"+name, kind, verbsVersion)
		}
	}
}

// addNamedFile reports a library whose version only its real file's name
// can carry; version returns "" when the name carries none.
func (s *libraryScan) addNamedFile(list *[]snapshot.Library, file, kind string, version func(string) string) {
	real, ok := s.realFile(file)
	if !ok {
		return
	}
	lib := snapshot.Library{Path: real, Kind: kind, Source: s.c.at(real, 0), Version: "unknown", How: "none"}
	if v := version(path.Base(real)); v != "" {
		lib.Version, lib.How = v, "file-name"
	}
	*list = append(*list, lib)
}

// addNetPlugin reports an NCCL net plugin and what put it on NCCL's path.
func (s *libraryScan) addNetPlugin(file, kind string) {
	n := len(s.ncclNet)
	s.addNamedFile(&s.ncclNet, file, kind, ncclNetVersion)
	if len(s.ncclNet) > n && s.dirVia.File != "" {
		s.netVia[s.ncclNet[n].Path] = s.dirVia
	}
}

// netPluginPath adds the plugin NCCL_NET_PLUGIN names by path: NCCL
// dlopens the value itself, then libnccl-net-<value>.so unless it has a
// slash or is a lib*.so name (src/plugin/plugin_open.cc, openPluginLib);
// unset, libnccl-net.so. A value with a slash is a file on this host.
func (s *libraryScan) netPluginPath() {
	v, ok := s.c.snap.NCCLConfig.Effective["NCCL_NET_PLUGIN"]
	if !ok || !strings.HasPrefix(v, "/") {
		return
	}
	s.dirVia = s.c.snap.Sources["nccl_config.effective.NCCL_NET_PLUGIN"]
	if _, err := s.c.src.Stat(rel(v)); err == nil {
		s.addNetPlugin(v, "other")
	}
	s.dirVia = snapshot.Provenance{}
}

// ncclNetVersion is the numeric suffix of a plugin's file name, if any
// (libnccl-net.so.1.9.1); most plugins carry none.
func ncclNetVersion(name string) string {
	_, v, _ := strings.Cut(name, ".so.")
	return v
}

// verbsVersion is the rdma-core release of a libibverbs file name.
func verbsVersion(name string) string {
	if m := verbsRelease.FindStringSubmatch(name); m != nil {
		return m[1]
	}
	return ""
}

func (s *libraryScan) addNVML(file, version string) {
	s.nvml[version] = true
	if real, err := RealPath(s.c.src, file); err == nil && !slices.Contains(s.nvmlFiles, real) {
		s.nvmlFiles = append(s.nvmlFiles, real)
	}
}

// addLibraryFile reports a library found by name, its version taken from the
// real file's name or, failing that, from the banner inside it.
func (s *libraryScan) addLibraryFile(list *[]snapshot.Library, fam libraryFamily, file, kind string) {
	real, ok := s.realFile(file)
	if !ok {
		return
	}
	lib := snapshot.Library{Path: real, Kind: kind, Source: s.c.at(real, 0)}
	lib.Version, lib.How = s.versionOfFile(fam, real)
	*list = append(*list, lib)
}

// versionOfFile reads a version from a library file's name, or its banner.
func (s *libraryScan) versionOfFile(fam libraryFamily, real string) (version, how string) {
	v := strings.TrimPrefix(strings.TrimPrefix(path.Base(real), fam.prefix), ".")
	if v != "" && strings.Count(v, ".")+1 >= fam.fullParts {
		return v, "file-name"
	}
	if fam.embedded {
		if v, ok := s.embeddedVersion(real); ok {
			return v, "embedded-string"
		}
		// A bare soname major ("2") would read as a release; say unknown.
		return "unknown", "none"
	}
	if v != "" {
		// A CUDA runtime's soname major ("12") is what driver checks need.
		return v, "file-name"
	}
	return "unknown", "none"
}

// embeddedVersion streams a library looking for NCCL's version banner.
func (s *libraryScan) embeddedVersion(file string) (string, bool) {
	f, err := s.c.src.Open(rel(file))
	if err != nil {
		s.c.fail("libraries", file, err)
		return "", false
	}
	defer f.Close()
	if err := checkRegular(f, file); err != nil {
		s.c.fail("libraries", file, err)
		return "", false
	}
	v, _, err := scanNCCLVersion(ctxScanReader{s.c.ctx, f}, ncclScanLimit, ncclScanChunk)
	if err != nil {
		s.c.fail("libraries", file, fmt.Errorf("scanning for the NCCL version: %w", err))
		return "", false
	}
	return v, v != ""
}

// ctxScanReader stops a long read when the collection is cancelled.
type ctxScanReader struct {
	ctx context.Context
	r   io.Reader
}

func (r ctxScanReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}

func (s *libraryScan) scanSitePackages(dir string) {
	real, ok := s.realDir(dir)
	if !ok {
		return
	}
	for _, e := range s.c.readDir("libraries", real) {
		switch lower := strings.ToLower(e.Name()); {
		case ncclDistInfo.MatchString(lower):
			s.addWheel(&s.nccl, ncclFamily, real, e.Name())
		case cudartDistInfo.MatchString(lower):
			s.addWheel(&s.cuda, cudartFamily, real, e.Name())
		case e.Name() == "torch":
			// Some torch builds carry their own libnccl next to libtorch.
			if pathPresent(s.c, "libraries", real+"/torch/lib") {
				s.scanLibraryDir(real+"/torch/lib", "wheel")
			}
		}
	}
}

// addWheel reports one wheel: the version from its METADATA, the path of the
// library it installed (from RECORD), or the dist-info directory when the
// library is gone.
func (s *libraryScan) addWheel(list *[]snapshot.Library, fam libraryFamily, siteDir, distInfo string) {
	distDir := siteDir + "/" + distInfo
	lib := snapshot.Library{Kind: "wheel"}
	metadata := distDir + "/METADATA"
	if data, ok := s.c.read("libraries", metadata); ok {
		md, errs := parseDistInfoMetadata(data)
		for _, err := range errs {
			s.c.fail("libraries", metadata, err)
		}
		if md.VersionLine > 0 {
			lib.Version, lib.How, lib.Source = md.Version, "dist-info", s.c.at(metadata, md.VersionLine)
		}
	}
	file := s.wheelLibrary(fam, siteDir, distDir)
	if file != "" {
		real, ok := s.realFile(file)
		if !ok {
			return
		}
		lib.Path = real
	} else {
		if s.seen[distDir] {
			return
		}
		s.seen[distDir] = true
		lib.Path = distDir
	}
	if lib.How == "" {
		if file != "" {
			lib.Version, lib.How = s.versionOfFile(fam, lib.Path)
			lib.Source = s.c.at(lib.Path, 0)
		} else {
			lib.Version, lib.How, lib.Source = "unknown", "none", s.c.at(distDir, 0)
		}
	}
	*list = append(*list, lib)
}

// wheelLibrary finds the library a wheel installed, "" when there is none.
func (s *libraryScan) wheelLibrary(fam libraryFamily, siteDir, distDir string) string {
	record := distDir + "/RECORD"
	var candidates []string
	if data, ok := s.c.read("libraries", record); ok {
		files, err := parseRecord(data)
		if err != nil {
			s.c.fail("libraries", record, err)
		}
		for _, f := range files {
			if fam.fileName.MatchString(path.Base(f)) {
				candidates = append(candidates, path.Join(siteDir, f))
			}
		}
	}
	if fam.wheelLib != "" {
		candidates = append(candidates, siteDir+"/"+fam.wheelLib)
	}
	for _, f := range candidates {
		if _, err := s.c.src.Stat(rel(f)); err == nil {
			return f
		}
	}
	return ""
}

// ldSoConfDir is a directory of the loader's configuration and the line
// that names it.
type ldSoConfDir struct {
	dir, file string
	line      int
}

// ldSoConfDirs lists the directories of /etc/ld.so.conf and the files it
// includes, in order.
func (s *libraryScan) ldSoConfDirs() []ldSoConfDir {
	c := s.c
	var dirs []ldSoConfDir
	active := map[string]bool{}
	visited := 0
	var visit func(file string)
	visit = func(file string) {
		if visited++; visited > maxLdSoConfFiles {
			if visited == maxLdSoConfFiles+1 {
				c.fail("libraries", file, fmt.Errorf("%w: more than %d files included", ErrParse, maxLdSoConfFiles))
			}
			return
		}
		data, ok := c.read("libraries", file)
		if !ok {
			return
		}
		entries, errs := parseLdSoConf(data)
		for _, err := range errs {
			c.fail("libraries", file, err)
		}
		active[file] = true
		defer delete(active, file)
		for _, e := range entries {
			if e.Dir != "" {
				dirs = append(dirs, ldSoConfDir{e.Dir, file, e.Line})
				continue
			}
			for _, pattern := range e.Includes {
				if !strings.HasPrefix(pattern, "/") {
					pattern = path.Join(path.Dir(file), pattern)
				}
				matches, err := fs.Glob(c.src, rel(pattern))
				if err != nil {
					c.fail("libraries", file, fmt.Errorf("%w: line %d: include %.60q: %w", ErrParse, e.Line, pattern, err))
					continue
				}
				for _, m := range matches {
					included := "/" + m
					if active[included] {
						c.fail("libraries", file, fmt.Errorf("%w: line %d: %s includes itself", ErrParse, e.Line, c.at(included, 0).Path()))
						continue
					}
					visit(included)
				}
			}
		}
	}
	visit(ldSoConf)
	return dirs
}
