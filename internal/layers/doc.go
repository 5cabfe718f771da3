// Package layers holds the module's layering rules and the test that checks them against the
// code's imports (go/build, the non-test files of each package): the judge (harness) knows no
// case, test, environment or file path; cases know no caller; the callers (commands,
// conformance, bench, mutate) take their cases from package cases, never from the fuzz tests;
// the binding, the oracle and arch know nothing above them; and the environment is read in
// package settings alone. README.md's layout table draws the same picture.
package layers
