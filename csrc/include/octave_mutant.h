// Mutants: deliberate, realistic defects compiled in with -DOCTAVE_MUTANT=<id> (make cuda
// MUTANT=<id>, make emu MUTANT=<id>), to measure which tests catch which bug. The normal build
// defines none (OCTAVE_MUTANT = 0) and no mutant code is reachable. Every id is listed, with the op,
// the defect and the bug class it stands for, in corpus/mutants.md; the library's build info names
// the mutant ("mutant=<id>") so a mutant library is never mistaken for a real one.
#pragma once

#ifndef OCTAVE_MUTANT
#define OCTAVE_MUTANT 0
#endif

// OCT_MUTANT(id) is true in the build of mutant id only.
#define OCT_MUTANT(id) (OCTAVE_MUTANT == (id))

// Mutant ids (corpus/mutants.md).
#define OCT_MUT_REDUCE_PAD_UNWRITTEN 1  // reduce: rows with no valid split (padding) not written
