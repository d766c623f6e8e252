package formats

import (
	"bytes"
	"testing"
)

// render is what Render and renderTablewriter write for a table.
func renderBoth(t *testing.T, tab *Table) (fast, slow string) {
	t.Helper()
	var a, b bytes.Buffer
	if err := tab.Render(&a); err != nil {
		t.Fatal(err)
	}
	if err := tab.renderTablewriter(&b); err != nil {
		t.Fatal(err)
	}
	return a.String(), b.String()
}

// tableOf builds a table from fuzz bytes: a header of data[0]%5 columns,
// then rows of cells cut from the rest at '|', '\n' ending a row.
func tableOf(data []byte) *Table {
	if len(data) == 0 {
		return NewTable()
	}
	n := int(data[0] % 5)
	var cells []string
	cur := []byte{}
	var rows [][]string
	for _, c := range data[1:] {
		switch c {
		case '|':
			cells = append(cells, string(cur))
			cur = cur[:0]
		case '\n':
			rows = append(rows, append(cells, string(cur)))
			cells, cur = nil, cur[:0]
		default:
			cur = append(cur, c)
		}
	}
	header := []string{"A", "BB", "C C", " D", "日本"}[:n]
	tab := NewTable(header...)
	for _, r := range rows {
		tab.Append(r...)
	}
	return tab
}

var tableSeeds = []string{
	"\x03a|b|c\nddd|e|ff\n",
	"\x00",
	"\x02|\n x | y \n",
	"\x04日本語|é|a\u0301|\x1b[31m\n\t|\u202e|ｗｉｄｅ|z\n",
	"\x01only\n\n",
	"\x03a|b\nc|d|e\n",
}

func TestRenderIsTablewriters(t *testing.T) {
	for _, s := range tableSeeds {
		if fast, slow := renderBoth(t, tableOf([]byte(s))); fast != slow {
			t.Errorf("%q:\nRender\n%q\ntablewriter\n%q", s, fast, slow)
		}
	}
}

func FuzzRenderIsTablewriters(f *testing.F) {
	for _, s := range tableSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if fast, slow := renderBoth(t, tableOf(data)); fast != slow {
			t.Errorf("%q:\nRender\n%q\ntablewriter\n%q", data, fast, slow)
		}
	})
}
