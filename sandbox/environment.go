package sandbox

import (
	"context"
	"fmt"
	"strings"

	"github.com/docker/docker/errdefs"

	"github.com/airlock-dev/airlock/core"
)

// LabelEnvironment is the image label naming the environment an image was
// built for (environments/builder sets it); EnvImagePrefix starts the tag
// of every environment's image (airlock/env-NAME:HASH).
const (
	LabelEnvironment = "airlock.environment"
	EnvImagePrefix   = "airlock/env-"
)

// imageInfo is what the engine learned, once, from an image's labels.
type imageInfo struct {
	runner bool   // carries the controller at RunnerPath
	link   bool   // its controller talks over the link (LabelWire=WireLink)
	env    string // the environment it was built for ("" for none)
}

// poolKey names one warm pool. Every field separates containers that must
// never serve each other's calls: the image (an environment's or a
// built-in one) and the hash of the egress policy its containers' doors
// serve ("" for containers with no door). The owner separates the
// containers of one pool (its owned idle sets).
type poolKey struct {
	image  string
	egress string // egress.Policy.Hash, "" for none
}

// imageFor picks the request's image: the built-in environment it names
// (python, shell), else the language's, or another of the configured
// images, or an environment's image (airlock/env-NAME:HASH, checked by
// requireController to carry the environment label): never an arbitrary
// image from a request.
func (e *Engine) imageFor(req core.Request) (string, error) {
	if req.Image != "" {
		for _, img := range e.cfg.Images {
			if img == req.Image {
				return img, nil
			}
		}
		if strings.HasPrefix(req.Image, EnvImagePrefix) && req.Environment != "" {
			return req.Image, nil
		}
		return "", fmt.Errorf("image %q is not one of the server's sandbox images", req.Image)
	}
	if req.Environment != "" {
		img, ok := e.cfg.Images[core.Language(req.Environment)]
		if !ok {
			return "", fmt.Errorf("environment %q is not built in and names no image", req.Environment)
		}
		return img, nil
	}
	img, ok := e.cfg.Images[req.Language]
	if !ok {
		return "", fmt.Errorf("language %q is not one of python, shell", req.Language)
	}
	return img, nil
}

// isEnvImage reports whether image is an environment's image rather than
// a configured one.
func (e *Engine) isEnvImage(image string) bool {
	for _, img := range e.cfg.Images {
		if img == image {
			return false
		}
	}
	return strings.HasPrefix(image, EnvImagePrefix)
}

// requireController checks (once per image) that an image carries the
// in-container controller, which every sandbox container runs as its pid 1:
// it is the container's dead man's switch and in-container deadline. An
// image without it is refused with ErrNoController; an environment's image
// (EnvImagePrefix) must also carry LabelEnvironment naming env, which only
// a build that passed its checks tags.
func (e *Engine) requireController(ctx context.Context, image, env string) error {
	e.mu.Lock()
	info, known := e.runners[image]
	e.mu.Unlock()
	if !known {
		ii, err := e.docker.ImageInspect(ctx, image)
		if err != nil {
			if errdefs.IsNotFound(err) {
				if e.isEnvImage(image) {
					return fmt.Errorf("sandbox: the image %s of environment %s is not on this worker: %w", image, env, ErrImageMissing)
				}
				return fmt.Errorf("sandbox: image %s: %w: build it with `make images`", image, ErrImageMissing)
			}
			return fmt.Errorf("sandbox: inspect image %s: %w: %w", image, core.ErrUnavailable, err)
		}
		// Only the controller's exact path: an image with an older runner
		// speaks another protocol.
		if ii.Config != nil {
			info = imageInfo{runner: ii.Config.Labels[LabelRunner] == RunnerPath, link: ii.Config.Labels[LabelWire] == WireLink, env: ii.Config.Labels[LabelEnvironment]}
		}
		e.mu.Lock()
		e.runners[image] = info
		e.mu.Unlock()
	}
	if !info.runner {
		return fmt.Errorf("sandbox: image %s: %w (label %s=%s): rebuild it with `make images`, or build it from airlock/python or airlock/shell",
			image, ErrNoController, LabelRunner, RunnerPath)
	}
	if !info.link {
		// Its controller talks over stdin and stdout: it would exit at once.
		what := "rebuild it with `make images`"
		if e.isEnvImage(image) {
			what = "rebuild the sandbox images (make images), then the environment (airlock env build): it was built from an older base"
		}
		return fmt.Errorf("sandbox: image %s: %w: its controller is older than the link (no label %s=%s): %s",
			image, ErrNoController, LabelWire, WireLink, what)
	}
	if e.isEnvImage(image) && (info.env == "" || (env != "" && info.env != env)) {
		return core.Errorf("sandbox.check", core.ErrInvalid, fmt.Sprintf("image %s is not the image of environment %s (label %s=%q)", image, env, LabelEnvironment, info.env))
	}
	return nil
}

// Warm counts the idle warm containers of image (generic and owned, every
// lane) across its pools.
func (e *Engine) Warm(image string) int {
	e.mu.Lock()
	pools := make([]*pool, 0, 1)
	for k, p := range e.pools {
		if k.image == image {
			pools = append(pools, p)
		}
	}
	e.mu.Unlock()
	n := 0
	for _, p := range pools {
		p.mu.Lock()
		n += len(p.generic)
		for _, l := range p.owned {
			n += len(l)
		}
		p.mu.Unlock()
	}
	return n
}
