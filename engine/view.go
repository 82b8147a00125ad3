package engine

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// View is a byte range of whole batches in one segment, returned by
// Log.Read. The bytes it covers never change while it is held: a segment
// deleted (by retention or truncation) stays readable until every view of it
// is released. A View must be released exactly once; the zero View is empty
// and needs no release.
//
// A view holds a reference to its segment, not its log's descriptor: each
// read or send takes the descriptor for its length (reopening it if the
// file cache closed it meanwhile), so a fetch holding views of thousands of
// partitions holds a few descriptors, not thousands.
type View struct {
	seg *segment
	pos int64 // file position of the first byte
	n   int64 // length; the range is [pos, pos+n)
}

// Len is the number of bytes in the view.
func (v *View) Len() int64 { return v.n }

// Release gives the view's segment back; the view is empty afterwards.
func (v *View) Release() {
	if v.seg != nil {
		v.seg.releaseRef()
	}
	*v = View{}
}

// ReadAt reads from the view, off counted from its start (io.ReaderAt).
func (v *View) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("engine: view read at negative offset %d", off)
	}
	if off >= v.n {
		return 0, io.EOF
	}
	want := min(int64(len(p)), v.n-off)
	f, err := v.seg.acquireLog()
	if err != nil {
		return 0, err
	}
	defer v.seg.releaseLog()
	n, err := f.log.ReadAt(p[:want], v.pos+off)
	if err == nil && int64(n) < int64(len(p)) {
		err = io.EOF
	}
	if err == io.EOF && int64(n) < want {
		err = fmt.Errorf("engine: %s shorter than its data at position %d: %w", f.log.Name(), v.pos+off+int64(n), io.ErrUnexpectedEOF)
	}
	return n, err
}

// AppendTo appends the view's bytes to dst, for in-process readers.
func (v *View) AppendTo(dst []byte) ([]byte, error) {
	l := len(dst)
	dst = append(dst, make([]byte, v.n)...)
	if _, err := v.ReadAt(dst[l:], 0); err != nil && err != io.EOF {
		return dst[:l], err
	}
	return dst, nil
}

var copyBufPool = sync.Pool{New: func() any { return new([64 << 10]byte) }}

// WriteTo writes the view to w (io.WriterTo). When w exposes its descriptor
// (syscall.Conn, as *net.TCPConn does) the bytes go with sendfile(2), never
// through user space; otherwise they are copied through a 64 KiB buffer.
func (v *View) WriteTo(w io.Writer) (int64, error) {
	if v.n == 0 {
		return 0, nil
	}
	if sc, ok := w.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			n, err, handled := v.sendfile(rc)
			if handled {
				return n, err
			}
		}
	}
	return v.copyTo(w, 0)
}

// sendfile sends the view on rc. handled is false when the kernel refuses
// sendfile for this pair before sending anything, so the caller copies.
func (v *View) sendfile(rc syscall.RawConn) (written int64, err error, handled bool) {
	f, err := v.seg.acquireLog()
	if err != nil {
		return 0, err, true
	}
	defer v.seg.releaseLog()
	off := v.pos
	remain := v.n
	handled = true
	werr := rc.Write(func(fd uintptr) bool {
		for remain > 0 {
			n, serr := unix.Sendfile(int(fd), f.fd, &off, int(min(remain, 1<<30)))
			if n > 0 {
				written += int64(n)
				remain -= int64(n)
			}
			switch {
			case serr == unix.EAGAIN:
				return false // wait until the socket is writable
			case serr == unix.EINTR:
				continue
			case (serr == unix.EINVAL || serr == unix.ENOSYS) && written == 0:
				handled = false
				return true
			case serr != nil:
				err = fmt.Errorf("engine: sendfile from %s at %d: %w", f.log.Name(), off, serr)
				return true
			case n == 0:
				err = fmt.Errorf("engine: sendfile from %s at %d: %w", f.log.Name(), off, io.ErrUnexpectedEOF)
				return true
			}
		}
		return true
	})
	if err == nil && werr != nil {
		err = werr
	}
	if !handled {
		return 0, nil, false
	}
	return written, err, true
}

func (v *View) copyTo(w io.Writer, from int64) (int64, error) {
	buf := copyBufPool.Get().(*[64 << 10]byte)
	defer copyBufPool.Put(buf)
	var total int64
	for off := from; off < v.n; {
		n, err := v.ReadAt(buf[:], off)
		if n > 0 {
			m, werr := w.Write(buf[:n])
			total += int64(m)
			if werr != nil {
				return total, werr
			}
			off += int64(n)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return total, err
		}
		if n == 0 {
			break
		}
	}
	return total, nil
}
