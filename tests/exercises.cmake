# The tests that grade each exercise (docs/instructors.md): every test named here also carries
# the ctest label `ex.chNN.k` of the exercise region it grades (// BEGIN EXERCISE chNN.k in
# the code), so `ctest -L '^ex\.ch02\.3$'` runs one exercise's tests and scripts/grade.sh scores
# them. Included at the end of tests/CMakeLists.txt, after every gtest_discover_tests().
#
# gtest_discover_tests(... DISCOVERY_MODE PRE_TEST) defines the tests when ctest runs, so their
# names do not exist at configure time. The labels are added by a script in the directory's
# TEST_INCLUDE_FILES that runs after the discovery scripts: each of those leaves the list of the
# tests it defined in `<executable>_TESTS`, and ours matches those names against the regexes
# below and sets LABELS (area labels + exercise labels) on the matches.
#
# Each list was chosen by running the chapter's fast tests (< 2 s each) on a student tree with
# that chapter's exercises stubbed: a test grades exercise k when it fails there and passes once
# k alone is put back (scripts/check_exercises.sh checks this in CI). Keep graded tests fast:
# grading runs them all.
#
#   nanoserve_exercise_tests(<exercise> <executable> <regex over the ctest name>)
#
# A ctest name is "Suite.Name", and "Suite.Name<Suite/fp32.  # TypeParam = float>" for a typed
# test; test_kernels' ".reverse" twins (tests/CMakeAreas.cmake) get the labels of their original.

set(NS_EXERCISE_IDS "")
set(NS_EXERCISE_EXECUTABLES "")
set(NS_EXERCISE_REGEXES "")
function(nanoserve_exercise_tests exercise executable regex)
  set(NS_EXERCISE_IDS ${NS_EXERCISE_IDS} "${exercise}" PARENT_SCOPE)
  set(NS_EXERCISE_EXECUTABLES ${NS_EXERCISE_EXECUTABLES} "${executable}" PARENT_SCOPE)
  set(NS_EXERCISE_REGEXES ${NS_EXERCISE_REGEXES} "${regex}" PARENT_SCOPE)
endfunction()

# ─── ch01 ──────────────────────────────────────────────────────────────────────────────────
nanoserve_exercise_tests(ch01.1 test_ch01
  "^(Ch01NaiveKVCache\\.HoldsTheKeysAndValuesTheOracleCaches|Ch01GenerationEdges\\.APromptOfOnlyBosGeneratesWhatTheOracleGenerates)$")
nanoserve_exercise_tests(ch01.2 test_kernels
  "^Attention(Decode|Prefill)Typed\\.(EveryVersionMatchesTheOracleAcross[A-Za-z]+|HandlesUnusualGroupsAndWidths|ChunksThatStartMidSequence)<")
nanoserve_exercise_tests(ch01.2 test_kernels
  "^AttentionDecode\\.(EmptySequencesGetZerosAndLongLengthsAreClamped|AutoVersionFallsBackToV01ForWidthsV02CannotLoad)$")
# ─── ch02 ──────────────────────────────────────────────────────────────────────────────────
nanoserve_exercise_tests(ch02.1 test_ch02
  "^Ch02BlockPool\\.(EvictsLeastRecentlyUsedCachedBlockFirst|DuplicateChainsShareAChainIdAndOutliveEachOther)$")
nanoserve_exercise_tests(ch02.2 test_ch02
  "^Ch02KVCacheCollisions\\.(DifferentPromptsWithEqualHashesNeverShareABlock|EqualBlocksUnderDifferentParentsAreDifferentChains|ChildOfADuplicateBlockIsFoundThroughTheOriginal)$")
nanoserve_exercise_tests(ch02.2 test_ch02
  "^Ch02KVCacheManager\\.(PrefixHitAcrossRequestsSharesTheSystemPromptBlocks|HitOnAFinishedRequestsBlocksTakesThemOutOfTheFreeQueue|FullyCachedPromptStillRecomputesItsLastToken|FreeCachedHitsCountAgainstTheFreeBlocks)$")
nanoserve_exercise_tests(ch02.2 test_ch02 "^Ch02KVCacheBench\\.RunsTheWorkloadItDescribes$")
nanoserve_exercise_tests(ch02.3 test_ch02
  "^Ch02KVCacheFork\\.(SharedPartialBlockIsCopiedBeforeTheFirstWrite|ParallelSamplingOfFourUsesTenBlocksInsteadOfSixteen)$")
nanoserve_exercise_tests(ch02.3 test_ch02
  "^Ch02KVCacheRollback\\.RejectedDraftsInACachedBlockAreCopiedNotOverwritten$")
nanoserve_exercise_tests(ch02.4 test_kernels "^Paged(Decode|Prefill)(Typed)?\\.[A-Za-z0-9]+(<.*>)?$")
nanoserve_exercise_tests(ch02.4 test_kernels "^PagedKv\\.KvAppendScattersWhatPagedAttentionGathers$")
# ─── ch03 ──────────────────────────────────────────────────────────────────────────────────
nanoserve_exercise_tests(ch03.1 test_ch03
  "^Ch03StaticBatcher\\.(ABatchClosesEarlyWhenWorstCaseKVNoLongerFits|RejectsWhatCanNeverFitAndRunsTheRest|WorstCaseBlocksCountPromptPlusAllButTheLastToken)$")
nanoserve_exercise_tests(ch03.2 test_ch03 "^Ch03StaticBatcher\\.CountsPaddingAndIdleSlotsExactly$")
# ─── ch04 ──────────────────────────────────────────────────────────────────────────────────
nanoserve_exercise_tests(ch04.1 test_ch04
  "^Ch04Scheduler\\.(PreemptsTheNewestRequestAndRequeuesItAtTheFront|APreemptedRequestRecomputesOnlyWhatThePrefixCacheLost)$")
nanoserve_exercise_tests(ch04.1 test_ch04
  "^Ch04BatchingEquivalence\\.EveryRequestGetsItsSoloTokensUnderEveryPolicy$")
nanoserve_exercise_tests(ch04.2 test_ch04
  "^Ch04Scheduler\\.(ChunkedPrefillSplitsALongPromptOverSteps|RunningDecodesComeFirstAndAPrefillChunkTakesTheRestOfTheBudget|WithoutChunkingAPromptWaitsForRoomForAllOfItAndNobodyOvertakesIt|WithChunkingTheSameRequestsShareTheFirstStep)$")
nanoserve_exercise_tests(ch04.2 test_ch04
  "^Ch04ServingLoop\\.ChunkedPrefillBoundsTheInterTokenLatencyOfRunningRequests$")
# ─── ch05 ──────────────────────────────────────────────────────────────────────────────────
nanoserve_exercise_tests(ch05.1 test_ch05
  "^QuantRtn\\.(SymmetricInt4MatchesHandComputedCodesWithTiesToEven|AsymmetricInt4MatchesHandComputedCodes|AsymmetricRangeAlwaysContainsZero|ErrorIsAtMostHalfAStepForEveryElement|PartialLastGroupGetsItsOwnScale|AllZeroGroupDequantizesToZero|FakeQuantizationEqualsDequantizedPackedResult|StorageBytesCountCodesScalesAndZeros)$")
nanoserve_exercise_tests(ch05.1 test_ch05 "^QuantAwq\\.AlphaZeroEqualsRtn$")
nanoserve_exercise_tests(ch05.1 test_ch05
  "^Ch05QuantizedForwardFp16\\.MatchesTheOracleWithTheRestRoundedToFp16$")
nanoserve_exercise_tests(ch05.2 test_ch05
  "^QuantGptq\\.(LazyBatchesMatchColumnByColumnObsReference|ActOrderDequantizesInOriginalColumnOrder|DeadInputColumnIsQuantizedToZero|LowersOutputErrorBelowRtnOnCorrelatedInputs)$")
nanoserve_exercise_tests(ch05.2 test_ch05 "^QuantIo\\.RoundTripKeepsEveryByteAndEveryWeight$")
nanoserve_exercise_tests(ch05.3 test_ch05
  "^(QuantAwq\\.SearchReturnsTheGridMinimumOfTheOutputError|QuantMetrics\\.AwqScalesAreUndoneBeforeComparing)$")
# ─── ch06 ──────────────────────────────────────────────────────────────────────────────────
nanoserve_exercise_tests(ch06.1 test_ch06
  "^Ch06Rejection\\.(HandmadeSixTokenCaseReproducesTargetDistribution|PointMassProposalReproducesTargetDistribution|AcceptsAlwaysWhenTargetIsAtLeastDraftAndResamplesOnlyWherePExceedsQ)$")
nanoserve_exercise_tests(ch06.1 test_ch06
  "^(Ch06SpecEdges\\.IdenticalDraftHasEveryTokenAccepted|Ch06SpecSampling\\.(DecisionAtAPositionDoesNotDependOnGamma|SameSeedSameTokens))$")
nanoserve_exercise_tests(ch06.2 test_ch06 "^Ch06SpecEdges\\.StopTokenAmongAcceptedDraftsEndsTheOutputThere$")
# ─── ch07 ──────────────────────────────────────────────────────────────────────────────────
nanoserve_exercise_tests(ch07.1 test_ch07
  "^(Ch07KVDrafts\\.DraftSlotsAreCachedOnlyOnceVerified|Ch07SpecScheduler\\.(DraftsRideAfterTheLastTokenAndRejectedOnesAreRolledBack|DraftRowsCountAgainstTheBudgetAndAreCutToIt|UpdateRefusesEntriesThatAreNotAVerificationAndStaysRetryable)|Ch07Examples\\.Drafter)$")
nanoserve_exercise_tests(ch07.2 test_ch07
  "^Ch07ParallelSampling\\.(ForksAfterThePromptSharesItsBlocksAndCopiesThePartialOneOnWrite|AGroupIsPreemptedAndReadmittedAsOneWithItsSoloTokens|CancellingARequestCancelsItsSamples|EverySampleOfTheModelEqualsItsSoloRunWithItsSeed)$")
nanoserve_exercise_tests(ch07.3 test_ch07
  "^(Ch07KVSwap\\.SwapOutKeepsTheSharingOfForkedSamplesAndSwapInRestoresIt|Ch07SwapPreemption\\.SwappedRequestsComeBackBeforeNewOnesAndWithoutRecomputing|Ch07Examples\\.HostBlockPool)$")
# ─── ch08 ──────────────────────────────────────────────────────────────────────────────────
nanoserve_exercise_tests(ch08.1 test_ch08
  "^Ch08TextStream\\.(StopStringSplitOverTokensIsHeldBackAndCut|HeldBackTextThatIsNoStopStringIsSentLater|SentTextIsAlwaysTheFinalTextOnRandomInputs)$")
nanoserve_exercise_tests(ch08.2 test_ch08 "^Ch08ApiServer\\.ClientDisconnectMidStreamCancelsAndFreesBlocks$")
nanoserve_exercise_tests(ch08.3 test_ch08
  "^(Ch08AsyncEngine\\.(FullQueueRefusesWithEngineBusy|AWaitingGroupCountsItsSamplesInTheQueue)|Ch08ApiServer\\.FullQueueIs429WithRetryAfter)$")
# ─── ch09 ──────────────────────────────────────────────────────────────────────────────────
nanoserve_exercise_tests(ch09.1 test_ch09
  "^(Ch09HandOff\\.(AdoptionGivesFreshBlocksReusesTheDecodeSidesPrefixCacheAndDecodesOn|AdoptionWaitsWhenThePoolIsFull)|Ch09KVPack\\.PackedBlocksUnpackIntoOtherBlocksBitForBitAndDecodingContinues|Ch09Modeled\\.[A-Za-z]+)$")
nanoserve_exercise_tests(ch09.2 test_ch09 "^RooflineLink\\.ARingAllReduceMovesTwiceTheBufferTimesNMinusOneOverN$")

# The script ctest runs after discovery: area labels per executable, as the areas set them
# (tests/CMakeLists.txt, tests/CMakeAreas.cmake).
set(NS_EXERCISE_BASE_LABELS_test_kernels kernels)
if(NANOSERVE_BACKEND STREQUAL "cuda")
  set(NS_EXERCISE_BASE_LABELS_test_kernels kernels gpu)
endif()
foreach(chapter ch01 ch02 ch03 ch04 ch05 ch06 ch07 ch08 ch09)
  set(NS_EXERCISE_BASE_LABELS_test_${chapter} ${chapter} ${NANOSERVE_CHAPTER_TEST_LABELS})
endforeach()

set(script "# Generated by tests/exercises.cmake: exercise labels on discovered tests.\n")
set(executables ${NS_EXERCISE_EXECUTABLES})
list(REMOVE_DUPLICATES executables)
list(LENGTH NS_EXERCISE_IDS n_rules)
math(EXPR last_rule "${n_rules} - 1")
foreach(executable IN LISTS executables)
  list(JOIN NS_EXERCISE_BASE_LABELS_${executable} ";" base)
  string(APPEND script "foreach(t IN LISTS ${executable}_TESTS)\n"
                       "  set(labels \"${base}\")\n"
                       "  set(matched FALSE)\n"
                       # The simulator build runs test_kernels twice (a .reverse twin); grade both.
                       "  string(REGEX REPLACE \"[.]reverse$\" \"\" name \"\${t}\")\n")
  foreach(i RANGE ${last_rule})
    list(GET NS_EXERCISE_EXECUTABLES ${i} rule_executable)
    if(NOT rule_executable STREQUAL executable)
      continue()
    endif()
    list(GET NS_EXERCISE_IDS ${i} exercise)
    list(GET NS_EXERCISE_REGEXES ${i} regex)
    string(REPLACE "\\" "\\\\" regex "${regex}")
    string(REPLACE "\"" "\\\"" regex "${regex}")
    string(APPEND script "  if(name MATCHES \"${regex}\")\n"
                         "    list(APPEND labels ex.${exercise})\n"
                         "    set(matched TRUE)\n"
                         "  endif()\n")
  endforeach()
  string(APPEND script "  if(matched)\n"
                       "    set_tests_properties(\"\${t}\" PROPERTIES LABELS \"\${labels}\")\n"
                       "    if(NOT name STREQUAL t)\n"
                       "      set_tests_properties(\"\${name}\" PROPERTIES LABELS \"\${labels}\")\n"
                       "    endif()\n"
                       "  endif()\n"
                       "endforeach()\n")
endforeach()
file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/exercise_labels.cmake" "${script}")
set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES
             "${CMAKE_CURRENT_BINARY_DIR}/exercise_labels.cmake")
