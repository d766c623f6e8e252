// Package debugfs reads saved RDMA state into rdma values: dumps of the
// legacy rdma_cm debugfs files (/sys/kernel/debug/rdma_cm/<device>, from
// kernels that carried the unmerged 2009 patch; see FORMAT.md), and
// saved output of iproute2's `rdma res show cm_id|qp`, as text or JSON.
//
// A Reader streams one input: memory does not grow with its size (lines are
// bounded by lines.Max, JSON values by MaxJSONValue). Every line yields a
// record, nothing (blank lines, headers, separators), or a *lineerr.Error
// "SOURCE:LINE: expected ..., found ..."; reading goes on after an error.
// Records keep their source, line, and the file a grep prefix or head/tail
// separator named (Origin). Inputs turns a path (file, directory tree, "-")
// into the inputs to read.
//
// # Where the format is ambiguous
//
// The format (FORMAT.md) leaves these points open; this is what the reader does.
//
// Kind of input. An input whose first non-blank byte is '[' or '{' is
// `rdma -j` JSON; anything else is read line by line, and each line is told
// apart by its content: a header, a "link DEV/PORT ..." line of `rdma res
// show`, a legacy row. Lines of one input may mix the kinds (a grep over a
// bundle). A directory stands for the files under it in a directory named
// rdma_cm, plus the other files whose first line is a header, an `rdma res
// show` line or `rdma -j` JSON; everything else in a support bundle is
// skipped. The walk never leaves the directory's filesystem, reads only
// rdma_cm/ under a debugfs root, and reads only regular files, opened
// non-blocking: a live /sys/kernel/debug or /proc holds files that block
// their reader (see Inputs). A UTF-8 BOM at the start of an input is not
// content.
//
// Headers. A line is a header when every cell is a column name (an
// upper-case letter, then upper-case letters, digits or '_') and DEVICE and
// STATE are among them; rows always hold numbers, so never look like one.
// A header sets the columns until the next one, whatever their order. The
// known names are the 2009 nine plus PID, COMM and TOS; any other name is an
// extra column whose cells are kept as rdma.KV under that name. A header
// naming a column twice, or holding more than 64, is an error and the
// columns in force stay. Rows before any header are read under the 2009
// columns. A header is not reset when the file named by a grep prefix
// changes: the files of one dump come from one kernel.
//
// Which cells may be left out. TYPE, NET_DEV and DST_ADDR (FORMAT.md says
// so), and every extra column (PID, COMM, TOS, unknown ones: a kernel-owned
// ID has no process). DEVICE, PORT, SRC_ADDR, SPACE, STATE and QP_NUM are
// always printed: PORT and QP_NUM print 0 for "none".
//
// Assigning cells to columns. Each column has a form: TYPE is IB, IW or ETH;
// DEVICE and NET_DEV are names without ':' or '/' (Linux refuses them in
// net device names) and not only digits; PORT, QP_NUM and PID are decimal
// numbers that fit 32 bits; SRC_ADDR and DST_ADDR are address:port; SPACE is
// TCP, UDP, IPOIB, IB or SDP; STATE is an rdma_cm state name; TOS is a
// decimal or 0x number; COMM and unknown extras take any cell. Names are
// matched without regard to case. The reader places cells from the left,
// preferring at each column to give it the next cell over leaving it out,
// and backs up when a choice leaves later cells with no place. So "IB 1 ib0
// ..." is DEVICE "IB" (TYPE left out), because "1" cannot be a DEVICE; and
// "IB mthca0 1 ib0 1.2.3.4:5 IB ..." has TYPE IB and SPACE IB. When several
// extra columns could take a short row's cells, the leftmost ones get them.
//
// Values. PORT 0 and QP_NUM 0 mean "no port" and "no QP": the resource has
// no port or lqpn (rdma.HasPort, rdma.HasLQPN unset), as netlink leaves the
// attributes out. IPv6 addresses are bracketed, "[addr]:port", and may carry
// a zone, "[fe80::1%ib0]:port", kept in SrcZone/DstZone; an unbracketed
// IPv6 address is accepted too, the last ':' separating the port (that is
// also how `rdma res show` text writes them). SDP is rdma.PSSDP (0x0042),
// which the model's PortSpace names "---". A COMM in brackets with no PID
// ("[nvmet_rdma]") is a kernel owner (Owner.KernName), as `rdma res show`
// writes it.
//
// Blanks in names. Cells are separated by spaces and tabs. A process name
// may hold blanks: when a row has more cells than its header has columns
// and the last column is COMM, COMM takes the rest of the row (with its
// blanks as they were), provided every other column then has its own cell;
// otherwise the row is an error.
//
// Escapes. Cells are decoded: \\ is a backslash, \xHH a byte, \u00HH that
// code point. These are the escapes LegacyWriter writes, so any
// value (blanks, control bytes, invalid UTF-8) survives a round trip; a
// backslash that starts no escape stays as it is. A dump in which a name
// really holds "\x41" reads as "A": such names do not occur in practice.
//
// Wrappings. "path:" before a line (grep -H, grep -r) is stripped and kept
// as Origin when the text before the first ':' holds no blank and is not a
// number (the "0:" of `rdma res show` summary lines); a following "N:"
// (grep -n) goes too. "==> path <==" sets Origin for the lines after it.
// A trailing CR (CRLF) and trailing blanks are ignored; a last line without
// a line end is read, and if it fails the error says the input may be
// truncated.
//
// Line numbers. A record's line is the physical line of its source where
// it starts: for grep output, the line of the grep output, not of the file
// grep read. A JSON record's line is the line its object starts on.
//
// `rdma res show` text (iproute2 6.1). "link DEV/PORT" or "link DEV/-",
// then KEY VALUE pairs. A line with an sq-psn key is a QP, one with a ps
// key an rdma_cm ID. comm runs to the next known key, since process names
// may hold blanks. iproute2 prints "IPoIB" for both RDMA_PS_IPOIB and
// RDMA_PS_IB; it is read as IPoIB. Values iproute2 prints for what it does
// not know ("UNKNOWN" types and states, "---" port spaces) leave the
// attribute out. drv_* pairs (rdma -d) and unknown keys become extras;
// with -p they sit on indented lines after their record, which the reader
// joins to it. Lines of other resources (cq, mr, pd, ctx, srq) and summary
// lines are errors that say what they are.
//
// `rdma -j` JSON. Arrays of objects with the text form's keys and ifindex,
// ifname, port; several arrays may follow each other. A comm with no pid is
// a kernel owner (iproute2 writes it without brackets in JSON). After a
// JSON syntax error the rest of that input cannot be read: the error says
// so.
package debugfs
