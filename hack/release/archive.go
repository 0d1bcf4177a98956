package main

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

// entry is one file of an archive: its name in the archive, its mode and
// where its bytes come from.
type entry struct {
	name string
	mode int64
	src  string
}

// archiveEntries are the files of bin's archive: the binary at the top,
// README.md and docs/plugin.md at their paths in the repository.
func archiveEntries(root, buildDir, bin string) []entry {
	es := []entry{{name: bin, mode: 0o755, src: filepath.Join(buildDir, bin)}}
	for _, f := range extraFiles {
		es = append(es, entry{name: f, mode: 0o644, src: filepath.Join(root, filepath.FromSlash(f))})
	}
	return es
}

// writeArchive writes a tar.gz of entries to dst that depends on nothing
// but their bytes, names and modes and on mtime: entries sorted by name,
// each folder they are in as an entry of its own, every time mtime (the
// commit's date), owner and group 0 with no names, USTAR headers (no
// access or change times), and a gzip header with no name or time. Two
// runs over the same files with the same Go give the same bytes. gzip's
// default level: its best saves under 1% of a binary at three times the
// time.
func writeArchive(dst string, entries []entry, mtime time.Time) (err error) {
	tmp := dst + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	zw, err := gzip.NewWriterLevel(f, gzip.DefaultCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(zw)
	for _, e := range withFolders(entries) {
		if err := addEntry(tw, e, mtime); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

// withFolders returns entries and the folders they are in (as entries with
// no src and a name ending in /), sorted by name.
func withFolders(entries []entry) []entry {
	out := append([]entry{}, entries...)
	seen := map[string]bool{}
	for _, e := range entries {
		for dir := path.Dir(e.name); dir != "."; dir = path.Dir(dir) {
			if !seen[dir] {
				seen[dir] = true
				out = append(out, entry{name: dir + "/", mode: 0o755})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func addEntry(tw *tar.Writer, e entry, mtime time.Time) error {
	hdr := &tar.Header{
		Name:    e.name,
		Mode:    e.mode,
		ModTime: mtime,
		Format:  tar.FormatUSTAR,
	}
	if strings.HasSuffix(e.name, "/") {
		hdr.Typeflag = tar.TypeDir
		return tw.WriteHeader(hdr)
	}
	src, err := os.Open(e.src)
	if err != nil {
		return err
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", e.src)
	}
	hdr.Typeflag = tar.TypeReg
	hdr.Size = st.Size()
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("%s: %w", e.name, err)
	}
	if _, err := io.Copy(tw, src); err != nil {
		return fmt.Errorf("%s: %w", e.name, err)
	}
	return nil
}

// packJob is one archive to write: its file name and its entries.
type packJob struct {
	name    string
	entries []entry
}

// packAll writes every job's archive into out, one a core at a time
// (compressing is most of a warm run's time), and returns the first error.
func packAll(out string, jobs []packJob, mtime time.Time) error {
	errs := make([]error, len(jobs))
	sem := make(chan struct{}, runtime.NumCPU())
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := writeArchive(filepath.Join(out, j.name), j.entries, mtime); err != nil {
				errs[i] = fmt.Errorf("%s: %w", j.name, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
