package main

// The record files a run writes (testrecord -o), per minor, under the records directory:
// <records>/<minor>/<suite>.tsv.
const (
	suiteUnit        = "unit"        // make test-unit: UNIT_PACKAGES; make test-minor: MINOR_UNIT_PACKAGES
	suiteRace        = "unit-race"   // make test-race: RACE_PACKAGES under -race
	suiteIntegration = "integration" // make test-integration, make test-minor
	suiteRelease     = "release"     // make test-release; make verify-release-minors (releaseEveryMinor)
	suiteUpgrade     = "upgrade"     // make test-upgrade; recorded under the newest minor
)

const module = "github.com/portcullis-k8s/portcullis/"

// capability is a row of docs/compatibility.md's table of what is tested on each minor: the
// tests that prove it, in one suite's record.
type capability struct {
	name  string
	suite string
	pkg   string
	// tests are the package's top-level tests that prove it; none: all of the package's.
	tests []string
	// packages counts the packages that passed rather than tests (the unit suites).
	packages bool
	// upgradeStep: the test is TestUpgradeAcrossMinors's step of the column's minor.
	upgradeStep bool
	// everyMinor: every minor's run proves it (make test-minor runs its unit suite and the API
	// server's integration suite); otherwise the newest minor's only (make test).
	everyMinor bool
}

// capabilities is the table, in the page's order. Every top-level test of the integration,
// release and upgrade suites must be in a row (render refuses a record with one that is not).
var capabilities = []capability{
	{name: "unit tests: every package on the newest minor; on an older one, those whose build differs per minor (`make test-minor`)", suite: suiteUnit, packages: true, everyMinor: true},
	{name: "the race detector, on the packages that run code concurrently", suite: suiteRace, packages: true},
	{name: "drift guards: the chain against that minor's upstream order and defaults (`pkg/admission/testdata/<minor>/`)", suite: suiteUnit, pkg: "pkg/admission", everyMinor: true,
		tests: []string{"TestUpstreamDrift", "TestUpstreamRelativeOrderIsKept", "TestDefaultsMatchStock", "TestEachPluginOfOursSitsAtItsAnchor", "TestEveryRegisteredPluginAppearsOnceInTheOrder"}},
	{name: "every plugin of ours through a real server, and the deploy kit's day-one configuration", suite: suiteIntegration, pkg: "test/integration/apiserver", everyMinor: true,
		tests: []string{"TestPodSecurityPolicy", "TestPodSecurityPolicyTrialBesidePodSecurity", "TestPodPreset", "TestInitializers", "TestInitialResources", "TestPersistentVolumeLabel", "TestDenyExec", "TestGuardrails", "TestDayOne"}},
	{name: "the drop-in: admission chains, `--help`, `--version` and served APIs against that minor's stock", suite: suiteIntegration, pkg: "test/integration/apiserver", everyMinor: true,
		tests: []string{"TestAdmission", "TestHelp", "TestVersion", "TestServedAPIs"}},
	{name: "kubeadm: a node rendered by that minor's kubeadm CLI, preflighted and served; the deploy kit rendered by it and served", suite: suiteIntegration, pkg: "test/integration/apiserver", everyMinor: true,
		tests: []string{"TestPreflightOnAKubeadmNode", "TestKubeadmRendersTheDeployKit"}},
	{name: "the rollback: that minor's stock starts on every file the project ships and on the etcd ours wrote", suite: suiteIntegration, pkg: "test/integration/apiserver", everyMinor: true,
		tests: []string{"TestRollback"}},
	{name: "HA mixes: servers of ours beside that minor's stock on one etcd keep our APIs discoverable, enforced and rolled back", suite: suiteIntegration, pkg: "test/integration/apiserver", everyMinor: true,
		tests: []string{"TestHAMixes"}},
	{name: "bad input: refused at start-up, naming the flag or field, before etcd; preflight's findings", suite: suiteIntegration, pkg: "test/integration/apiserver", everyMinor: true,
		tests: []string{"TestBadInput", "TestBadAdmissionFlagsFailBeforeEtcd", "TestPreflightFindsProblems"}},
	{name: "the build: upstream's module graph for that patch but the listed modules, stock built from it alone, upstream's godebug settings", suite: suiteIntegration, pkg: "test/integration/apiserver", everyMinor: true,
		tests: []string{"TestModuleGraphIsUpstreams"}},
	{name: "the build: the minor's Go toolchain and the PGO profile", suite: suiteIntegration, pkg: "test/integration/apiserver", everyMinor: true,
		tests: []string{"TestBuiltWithTheMinorsToolchain", "TestBuiltWithThePGOProfile"}},
	{name: "webhook dispatch through real servers (`test/integration/webhook`)", suite: suiteIntegration, pkg: "test/integration/webhook", everyMinor: true},
	{name: "`make run` (`test/integration/localup`)", suite: suiteIntegration, pkg: "test/integration/localup"},
	{name: "`make bench`'s and `make soak`'s harnesses, smoke-sized (`test/integration/bench`)", suite: suiteIntegration, pkg: "test/integration/bench"},
	{name: "the docs' commands, run with kubeadm's and kubectl's CLIs (`test/integration/docs`)", suite: suiteIntegration, pkg: "test/integration/docs"},
	{name: "the release (`test/release`): static, trimmed and stamped binaries, SHA256SUMS, the SBOM, the licence texts, the image's index and filesystem, the deploy kit naming it", suite: suiteRelease, pkg: "test/release", everyMinor: true,
		tests: releaseEveryMinor},
	{name: "the release (`test/release`): the image's config, kubeadm's use of it, skopeo, systemd-analyze, the alerting rules and their runbooks", suite: suiteRelease, pkg: "test/release",
		tests: []string{"TestReleaseBinaryKnowsThePlugins", "TestAdmissionConfig", "TestSystemdUnitVerifies", "TestSystemdUnitSettings", "TestKubeadmListsTheImage", "TestImageConfig",
			"TestKubeadmDeployment", "TestKubeadmOwnAdmissionConfig", "TestKubeadmAdvertiseAddress", "TestKubeadmUpgrade", "TestAlertingRules", "TestAlertRunbooks", "TestSkopeoReadsTheArchive", "TestSkopeoCopiesToContainersStorage"}},
	{name: "the upgrade across minors on one etcd (`test/upgrade`): objects unchanged, enforced, stored versions, stock rollback", suite: suiteUpgrade, pkg: "test/upgrade",
		tests: []string{"TestUpgradeAcrossMinors"}, upgradeStep: true, everyMinor: true},
}

// releaseEveryMinor are the release tests make verify-release-minors runs on each older
// minor's release (build/verify-release.sh asks for them: go run ./hack/compatibility
// -release-tests).
var releaseEveryMinor = []string{"TestSHA256SUMSCoversTheRelease", "TestBinariesAreStaticTrimmedAndStamped", "TestHostBinaryReportsTheVersion",
	"TestSBOM", "TestThirdPartyLicenses", "TestImageIndexPlatforms", "TestImageFilesystem", "TestReleaseCarriesTheDeployKit"}
