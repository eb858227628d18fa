package api

import (
	"fmt"
	"github.com/airlock-dev/airlock/internal/testscale"
	"strconv"
	"strings"
	"testing"
	"time"
)

// batchSSE splits an event stream into (id, event, data) triples.
func batchSSE(body string) (ids []int64, kinds, datas []string) {
	for _, block := range strings.Split(body, "\n\n") {
		var id int64 = -1
		kind, data := "", ""
		for _, l := range strings.Split(block, "\n") {
			switch {
			case strings.HasPrefix(l, "id: "):
				id, _ = strconv.ParseInt(l[4:], 10, 64)
			case strings.HasPrefix(l, "event: "):
				kind = l[7:]
			case strings.HasPrefix(l, "data: "):
				data = l[6:]
			}
		}
		if id >= 0 {
			ids, kinds, datas = append(ids, id), append(kinds, kind), append(datas, data)
		}
	}
	return
}

// TestBatchEventsPerItem: /v1/batches/{id}/events carries an "item" event
// per finished item (custom_id, status, duration_ms) among the "progress"
// ones, with dense ids; Last-Event-ID resumes after an id.
func TestBatchEventsPerItem(t *testing.T) {
	h := newHarness(t, nil)
	var jsonl strings.Builder
	for i := 0; i < 6; i++ {
		fmt.Fprintf(&jsonl, `{"custom_id":"c%d","tool_call":{"type":"function","function":{"name":"run_python","arguments":{"code":"print(%d)"}}}}`+"\n", i, i)
	}
	id := h.do(keyAlice, "POST", "/v1/batches", jsonl.String(), "Content-Type", "application/jsonl").must(t, 201).JSON(t)["id"].(string)
	var ids []int64
	var kinds, datas []string
	for deadline := time.Now().Add(testscale.D(10 * time.Second)); ; time.Sleep(testscale.D(20 * time.Millisecond)) {
		r := h.do(keyAlice, "GET", "/v1/batches/"+id+"/events", nil, "Last-Event-ID", "0").must(t, 200)
		ids, kinds, datas = batchSSE(string(r.Body))
		if strings.Contains(string(r.Body), "event: done") && len(datas) > 0 && strings.Contains(datas[len(datas)-1], `"status":"completed"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no completed stream: %s", r.Body)
		}
	}
	items := map[string]bool{}
	for i := range ids {
		if ids[i] != int64(i+1) {
			t.Fatalf("ids %v are not dense from 1", ids)
		}
		switch kinds[i] {
		case "item":
			if !strings.Contains(datas[i], `"object":"batch.item"`) || !strings.Contains(datas[i], `"status":"ok"`) || !strings.Contains(datas[i], `"duration_ms":`) {
				t.Errorf("item event %s", datas[i])
			}
			cid := datas[i][strings.Index(datas[i], `"custom_id":"`)+13:]
			cid = cid[:strings.Index(cid, `"`)]
			if items[cid] {
				t.Errorf("two item events for %s", cid)
			}
			items[cid] = true
		case "progress":
			if !strings.Contains(datas[i], `"object":"batch"`) {
				t.Errorf("progress event %s", datas[i])
			}
		default:
			t.Errorf("event %q", kinds[i])
		}
	}
	if len(items) != 6 {
		t.Fatalf("item events for %v, want c0..c5", items)
	}
	k := ids[len(ids)/2]
	r := h.do(keyAlice, "GET", "/v1/batches/"+id+"/events", nil, "Last-Event-ID", strconv.FormatInt(k, 10)).must(t, 200)
	rest, _, _ := batchSSE(string(r.Body))
	if len(rest) != len(ids)-int(k) || rest[0] != k+1 {
		t.Errorf("resume after %d: ids %v, want %d..%d", k, rest, k+1, len(ids))
	}
}
