package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"strings"

	"github.com/airlock-dev/airlock/client"
	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/wire"
)

// The Examples run against the server TestMain started (airlockURL, as
// alice with airlockKey); point them at yours with your URL and key.

func ExampleClient_RunPython() {
	ctx := context.Background()
	c, err := client.New(airlockURL, client.WithAPIKey(airlockKey))
	if err != nil {
		log.Fatal(err)
	}
	res, err := c.RunPython(ctx, "print(sum(range(10)))")
	if err != nil {
		log.Fatal(err) // the platform failed; the code's own failures are results
	}
	fmt.Print(res.Result.Status, " ", res.Result.Stdout)
	// Output: ok 45
}

func ExampleClient_CallTool() {
	ctx := context.Background()
	c, err := client.New(airlockURL, client.WithAPIKey(airlockKey))
	if err != nil {
		log.Fatal(err)
	}
	// A tool call as a model wrote it: arguments as a JSON string.
	res, err := c.CallTool(ctx, client.ToolCall{ID: "call_abc", Name: "execute_shell", Arguments: `{"command":"echo hello; exit 3"}`})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Message.Role, res.Message.ToolCallID)
	fmt.Println(res.Result.Status, *res.Result.ExitCode, strings.TrimSpace(res.Result.Stdout))
	// Output:
	// tool call_abc
	// error 3 hello
}

func ExampleClient_CreateSession() {
	ctx := context.Background()
	c, err := client.New(airlockURL, client.WithAPIKey(airlockKey))
	if err != nil {
		log.Fatal(err)
	}
	s, err := c.CreateSession(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.DeleteSession(ctx, s.ID)

	csv := "city,temp\nOslo,4\nRome,18\nCairo,29\n"
	if _, err := c.PutSessionFile(ctx, s.ID, "temps.csv", strings.NewReader(csv)); err != nil {
		log.Fatal(err)
	}
	run := func(code string) *wire.ToolCallResponse {
		res, err := c.CallSessionTool(ctx, s.ID, client.ToolCall{Name: "run_python", Arguments: map[string]any{"code": code}})
		if err != nil {
			log.Fatal(err)
		}
		return res
	}
	run("import pandas as pd\ndf = pd.read_csv('temps.csv')") // state stays in the session
	res := run("import matplotlib.pyplot as plt\nprint(df.temp.mean())\ndf.plot.bar(x='city', y='temp')\nplt.show()")
	fmt.Print(res.Result.Stdout)
	for _, a := range res.Result.Artifacts {
		png, err := c.DownloadArtifact(ctx, a)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(a.MIME, png.ContentType, len(png.Data) == int(a.Size))
	}
	// Output:
	// 17.0
	// image/png image/png true
}

func ExampleAPIError() {
	ctx := context.Background()
	c, err := client.New(airlockURL, client.WithAPIKey(airlockKey))
	if err != nil {
		log.Fatal(err)
	}
	_, err = c.GetSession(ctx, "sess_does_not_exist")
	var ae *client.APIError
	if errors.As(err, &ae) {
		fmt.Println(ae.StatusCode, ae.Code, ae.Temporary())
	}
	// A busy or rate-limited server says when to retry:
	//	if ae.Temporary() { time.Sleep(ae.RetryAfter) }
	// Output: 404 not_found false
}

func ExampleClient_FollowRun() {
	ctx := context.Background()
	c, err := client.New(airlockURL, client.WithAPIKey(airlockKey))
	if err != nil {
		log.Fatal(err)
	}
	shared.model.Add(scriptedAnswer("Paris")) // the test server's scripted model
	run, err := c.CreateRun(ctx, wire.CreateRunRequest{Goal: "What is the capital of France?"})
	if err != nil {
		log.Fatal(err)
	}
	// Every event once, in order; a dropped stream resumes after the last
	// event seen (Last-Event-ID).
	err = c.FollowRun(ctx, run.ID, 0, func(ev wire.RunEvent) error {
		if ev.Type == wire.EventFinalAnswer || ev.Type == wire.EventRunFinished {
			fmt.Println(ev.Seq > 0, ev.Type)
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	run, _ = c.GetRun(ctx, run.ID)
	fmt.Println(run.Status, run.FinalAnswer)
	// Output:
	// true final_answer
	// true run_finished
	// done Paris
}

func ExampleClient_CallToolStream() {
	ctx := context.Background()
	c, err := client.New(airlockURL, client.WithAPIKey(airlockKey))
	if err != nil {
		log.Fatal(err)
	}
	s, err := c.CallToolStream(ctx, client.ToolCall{Name: "run_python",
		Arguments: map[string]any{"code": "import time\nfor i in range(3): print(i); time.sleep(0.2)"}})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	for {
		ev, err := s.Next()
		if errors.Is(err, io.EOF) {
			break // the result has arrived
		}
		if err != nil {
			log.Fatal(err)
		}
		if ev.Kind == core.EventStdout {
			fmt.Printf("live: %q\n", ev.Text)
		}
	}
	res, err := s.Result()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Result.Status)
	// Output:
	// live: "0\n"
	// live: "1\n"
	// live: "2\n"
	// ok
}
