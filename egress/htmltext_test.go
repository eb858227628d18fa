package egress

import (
	"strings"
	"testing"
)

func TestHTMLText(t *testing.T) {
	doc := `<!doctype html><html><head><title> The  Page </title><style>p{color:red}</style>
<script>alert("x")</script></head>
<body><nav>Home | About</nav>
<h1>Main   title</h1>
<p>First <b>bold</b> and <a href="/x">a link</a>.<br>Second line.</p>
<ul><li>one</li><li>two <i>items</i></li></ul>
<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>
<pre>  keep
    this</pre>
<noscript>enable js</noscript><img src=x alt="a cat"><form><input value=secret><button>Go</button></form>
<p>caf&eacute; &amp; more</p></body></html>`
	title, text, err := htmlText(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if title != "The Page" {
		t.Errorf("title %q", title)
	}
	want := "Home | About\n\n# Main title\n\nFirst bold and a link.\nSecond line.\n\n- one\n- two items\n\na | b\n1 | 2\n\n  keep\n    this\n\n[a cat]\n\ncafé & more"
	if text != want {
		t.Errorf("text:\n%s\n--- want:\n%s", text, want)
	}
	for _, hidden := range []string{"alert", "color", "enable js", "secret", "Go"} {
		if strings.Contains(text, hidden) {
			t.Errorf("text keeps %q", hidden)
		}
	}
}
