// Command image assembles the release's OCI image of kube-apiserver without a container
// runtime: one image per platform, all under one image index, written as an OCI image layout
// inside a tar. Every byte follows from the binaries, the files in this directory and
// SOURCE_DATE_EPOCH, so two runs over the same binaries write the same archive.
//
// It is its own Go module so that go-containerregistry's requirements never move the
// versions of the modules linked into kube-apiserver itself.
//
//	go run . -version v1.37.1+portcullis.1 -source-date-epoch 1700000000 \
//	    -revision "$(git rev-parse HEAD)" -license ../../LICENSE -notice ../../NOTICE \
//	    -binary linux/amd64=../../_output/release/linux/amd64/kube-apiserver \
//	    -binary linux/arm64=../../_output/release/linux/arm64/kube-apiserver \
//	    -o ../../_output/release/kube-apiserver-v1.37.1+portcullis.1.oci.tar
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
)

func main() {
	opts, err := parseArgs(os.Args[1:], os.Getenv("SOURCE_DATE_EPOCH"), os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err == nil {
		err = writeImageArchive(opts)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "build/image: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("wrote %s (tag %s, platforms %s)\n", opts.output, opts.tag, strings.Join(platformNames(opts.binaries), ", "))
}

// options is what one run builds.
type options struct {
	version  string // VERSION, e.g. v1.37.1+portcullis.1
	tag      string // the image tag derived from version
	epoch    time.Time
	binaries []platformBinary // sorted by platform
	output   string
	// revision is the commit the release is built from; source the repository's URL.
	revision, source string
	// license and notice are the paths of the LICENSE and NOTICE files the image carries.
	license, notice string
	// thirdParty is a directory of the linked modules' licence texts (go-licenses save's
	// tree), carried under /usr/share/doc/portcullis/third-party; "" for none.
	thirdParty string
}

// defaultSource is the repository the release is built from.
const defaultSource = "https://github.com/portcullis-k8s/portcullis"

// revisionPattern is a full git commit hash.
var revisionPattern = regexp.MustCompile(`^[0-9a-f]{40}$`)

// binaryFlags collects repeated -binary os/arch=path flags.
type binaryFlags []platformBinary

func (b *binaryFlags) String() string { return fmt.Sprint(platformNames(*b)) }

func (b *binaryFlags) Set(value string) error {
	pb, err := parseBinaryFlag(value)
	if err != nil {
		return err
	}
	*b = append(*b, pb)
	return nil
}

// parseArgs reads the command line; envEpoch is $SOURCE_DATE_EPOCH, the fallback for
// -source-date-epoch.
func parseArgs(args []string, envEpoch string, usage io.Writer) (options, error) {
	fs := flag.NewFlagSet("build/image", flag.ContinueOnError)
	fs.SetOutput(usage)
	var binaries binaryFlags
	version := fs.String("version", "", "the release version (VERSION), e.g. v1.37.1+portcullis.1; the tag is kubeadm's for it, each character outside [-\\w.] replaced by _")
	epoch := fs.String("source-date-epoch", envEpoch, "seconds since the Unix epoch for every timestamp in the image (default $SOURCE_DATE_EPOCH)")
	output := fs.String("o", "", "the OCI image layout tar to write")
	fs.Var(&binaries, "binary", "os/arch=path of a static kube-apiserver; repeat once per platform")
	revision := fs.String("revision", "", "the commit the release is built from (40 hex digits): the image's org.opencontainers.image.revision")
	source := fs.String("source", defaultSource, "the repository the release is built from: the image's org.opencontainers.image.source")
	license := fs.String("license", "", "the LICENSE file the image carries under /usr/share/doc/portcullis")
	notice := fs.String("notice", "", "the NOTICE file the image carries under /usr/share/doc/portcullis")
	thirdParty := fs.String("third-party-licenses", "", "a directory of the linked modules' licence texts (go-licenses save's tree), carried under /usr/share/doc/portcullis/third-party")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() != 0 {
		return options{}, fmt.Errorf("unexpected arguments %q: every input is a flag", fs.Args())
	}

	var opts options
	var err error
	if opts.tag, err = imageTag(*version); err != nil {
		return options{}, err
	}
	opts.version = *version
	if opts.epoch, err = parseSourceDateEpoch(*epoch); err != nil {
		return options{}, err
	}
	if *output == "" {
		return options{}, errors.New("-o is required: the path of the OCI image tar to write")
	}
	opts.output = *output
	if !revisionPattern.MatchString(*revision) {
		return options{}, fmt.Errorf("-revision %q: want the commit's full hash, 40 hex digits (git rev-parse HEAD)", *revision)
	}
	opts.revision, opts.source = *revision, *source
	if *license == "" || *notice == "" {
		return options{}, errors.New("-license and -notice are required: the image carries both (Apache-2.0, section 4)")
	}
	opts.license, opts.notice, opts.thirdParty = *license, *notice, *thirdParty
	if len(binaries) == 0 {
		return options{}, errors.New("no -binary given: pass -binary os/arch=path once per platform")
	}
	opts.binaries = slices.Clone(binaries)
	slices.SortFunc(opts.binaries, func(a, b platformBinary) int { return strings.Compare(a.name(), b.name()) })
	for i := 1; i < len(opts.binaries); i++ {
		if opts.binaries[i].name() == opts.binaries[i-1].name() {
			return options{}, fmt.Errorf("-binary %s is given twice", opts.binaries[i].name())
		}
	}
	return opts, nil
}
