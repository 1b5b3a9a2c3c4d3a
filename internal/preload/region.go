package preload

import (
	"bufio"
	"debug/elf"
	"os"
	"strings"
)

// RegionSymbol is the routine a program calls to mark the start of the
// region approxtune times (include/approxtune.h's APPROXTUNE_BEGIN).
const RegionSymbol = "approxtune_begin"

// systemDirs hold the system's own libraries (MPI, BLAS, the C library),
// which never call RegionSymbol: MarksRegion does not read them.
var systemDirs = []string{"/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/"}

// MarksRegion reports whether this process's program may mark its timed
// region: its executable, or a library of its own it has loaded (one not
// in the system's directories, nor preloaded: the preload library defines
// the symbol), calls RegionSymbol (an undefined dynamic symbol, weak as
// approxtune.h declares it). Read at MPI_Init, it lets a selective launch
// run what comes before the region in full, as the reference launch does,
// instead of skipping it.
func MarksRegion() bool {
	seen := map[string]bool{}
	for _, p := range strings.FieldsFunc(os.Getenv("LD_PRELOAD"), func(r rune) bool { return r == ':' || r == ' ' }) {
		seen[p] = true
	}
	files := []string{"/proc/self/exe"}
	if f, err := os.Open("/proc/self/maps"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 6 || !strings.HasPrefix(fields[5], "/") {
				continue
			}
			p := fields[5]
			if seen[p] || system(p) {
				continue
			}
			seen[p] = true
			files = append(files, p)
		}
		f.Close()
	}
	for _, p := range files {
		if imports(p, RegionSymbol) {
			return true
		}
	}
	return false
}

// system says whether path is in one of the systemDirs.
func system(path string) bool {
	for _, d := range systemDirs {
		if strings.HasPrefix(path, d) {
			return true
		}
	}
	return false
}

// SkippingSymbol is the routine a program calls to learn whether its run
// may skip kernels (include/approxtune.h's APPROXTUNE_SKIPPING).
const SkippingSymbol = "approxtune_skipping"

// AsksSkipping reports whether the ELF executable at path calls
// SkippingSymbol (a program that skips its own result check in selective
// runs); known is false for a file that is not ELF (a script), which
// cannot be told.
func AsksSkipping(path string) (asks, known bool) { return asksFor(path, SkippingSymbol) }

// CutShortSymbol is the routine a program calls to learn whether a
// search's round has cut its launch short (include/approxtune.h's
// APPROXTUNE_CUT_SHORT).
const CutShortSymbol = "approxtune_cut_short"

// AsksCutShort reports whether the ELF executable at path calls
// CutShortSymbol; known is false for a file that is not ELF.
func AsksCutShort(path string) (asks, known bool) { return asksFor(path, CutShortSymbol) }

// LinksFortranMarks reports whether the ELF executable at path defines
// the Fortran binding of the marks (include/approxtune_fortran.c), which
// imports every symbol of approxtune.h whether the program calls it or
// not: AsksCutShort then cannot tell.
func LinksFortranMarks(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	syms, _ := f.Symbols()
	dyn, _ := f.DynamicSymbols()
	for _, s := range append(syms, dyn...) {
		if (s.Name == CutShortSymbol+"_" || s.Name == CutShortSymbol+"__") && s.Section != elf.SHN_UNDEF {
			return true
		}
	}
	return false
}

// asksFor reports whether the ELF executable at path imports sym; known
// is false for a file that is not ELF.
func asksFor(path, sym string) (asks, known bool) {
	f, err := elf.Open(path)
	if err != nil {
		return false, false
	}
	defer f.Close()
	return importsFrom(f, sym), true
}

// imports says whether the ELF file at path has sym among its undefined
// dynamic symbols, weak ones included (ImportedSymbols leaves those out).
func imports(path, sym string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	return importsFrom(f, sym)
}

// importsFrom is imports of an ELF file open as f.
func importsFrom(f *elf.File, sym string) bool {
	syms, err := f.DynamicSymbols()
	if err != nil {
		return false
	}
	for _, s := range syms {
		if s.Name == sym && s.Section == elf.SHN_UNDEF {
			return true
		}
	}
	return false
}
