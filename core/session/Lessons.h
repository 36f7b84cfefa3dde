// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// Lessons: guided walk-throughs of the articles QKV Lab comes from (docs/references.md), each a JSON file
/// (resources/lessons/*.lesson.json, compiled in like the examples). A lesson is a title and a sequence of
/// steps; a step is a short text, optionally a session to load or an edit to apply, the view to show, the
/// cell to select, an action on the window's Training workspace, a patching experiment, and optionally a
/// multiple-choice question.
/// Parsing checks everything a step will do against the session it will meet, so a lesson that loads is a
/// lesson that plays.

#include "Initializers.h"
#include "PatchSites.h"
#include "Session.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace qkv {

/// Options a step sets, each absent or the new value (session file spellings: "sqrt_dk", "causal", …).
struct LessonEdit {
    std::optional<double> temperature;
    std::optional<NormalizerType> normalizer;
    std::optional<double> alpha; ///< entmax α
    std::optional<Scale> scale;
    std::optional<MaskType> mask;
    std::optional<Index> prefixLength; ///< with mask prefix
    std::optional<Index> window;       ///< with mask sliding
    std::optional<ScoreFunction> score;
    std::optional<int> heads;
};

/// A multiple-choice question; `answer` indexes `options`.
struct LessonQuiz {
    std::string question;
    std::vector<std::string> options;
    std::size_t answer = 0;
    std::string explanation; ///< shown once an option is picked, right or wrong
};

/// What a step does with the window's Training workspace ("training": "start" or "open").
enum class LessonTraining {
    None,
    Start, ///< bring the tab forward and start a run of its form's settings (unless one is running)
    Open,  ///< open the model the last finished run trained in the model view
};

/// A patching experiment a step sets up in the Patching panel, on the model open at that step (a trained
/// one: its vocabulary is known only when the lesson plays, so the panel checks the ids then).
struct LessonPatching {
    std::vector<std::int64_t> clean, corrupt; ///< token ids, the same number of them
    std::int64_t answer = 0, wrong = 0;
    PatchSite site = PatchSite::HeadOut;
    PatchMethod method = PatchMethod::Exact;
};

/// A head of the open model opened as the session on token ids (as a patching grid's head cell opens it).
struct LessonHead {
    Index layer = 0, head = 0;
    std::vector<std::int64_t> ids;
};

struct LessonStep {
    std::string text;                   ///< rich text (a small HTML subset)
    std::optional<std::string> example; ///< "love" for "example:love": the session to load
    std::optional<LessonEdit> edit;     ///< applied after the session, as one undo step
    /// A figure name ("weights", "normalizers", …); empty only on a step that acts in the Training workspace.
    std::string view;
    LessonTraining training = LessonTraining::None;
    bool showTrainingTab =
        false;                 ///< "dock": "training": bring the Training workspace forward (after the view)
    bool showPatching = false; ///< "dock": "patching", or a step with "patching": the Patching panel
    bool showScoreTerms = false; ///< "dock": "score_terms": the Score Terms panel (a score taken apart)
    std::optional<LessonPatching> patching;
    std::optional<LessonHead> head;              ///< opened before the view and cell are shown
    std::optional<std::pair<Index, Index>> cell; ///< query row, key column to select
    std::optional<LessonQuiz> quiz;
};

struct Lesson {
    std::string file; ///< the file it came from, for messages ("03-love.lesson.json")
    std::string title;
    std::vector<LessonStep> steps;
};

/// Parses and checks a lesson: JSON, keys and types, every view among `views`, every example known, the
/// first step loading a session (or acting in the Training workspace, which needs none), every edit valid for
/// the session it meets and every cell inside it (an edit or a cell needs a session the lesson loaded: not
/// none, nor the trained model a "training": "open" step opens, whose size the file cannot know; a cell may
/// also select in a model's head a "head" step opens on its ids). Throws
/// qkv::Error "FILE: step K: what is wrong" (K from 1) or "FILE: what is wrong".
Lesson parseLesson(const std::string& file, const std::string& text, const std::vector<std::string>& views);

/// Reads and parses the lesson file at `path` (messages name the file by its path).
Lesson loadLessonFile(const std::string& path, const std::vector<std::string>& views);

/// The built-in lessons' file names in order ("01-love.lesson.json", …).
std::vector<std::string> builtinLessonFiles();
/// Parses the built-in lesson `file`; throws qkv::Error like parseLesson (or for an unknown name).
Lesson loadBuiltinLesson(const std::string& file, const std::vector<std::string>& views);

/// Applies a step's edit to `session` (heads and score parameters drawn with `init`).
void applyLessonEdit(Session& session, const LessonEdit& edit, const InitializerSpec& init);

/// The session a lesson leaves after step `step` (0-based) when played from its start: each step's
/// example, then its edit. Throws qkv::Error for an unknown example.
Session lessonSessionAfter(const Lesson& lesson, std::size_t step, const InitializerSpec& init = {});

/// Whether `option` answers the quiz.
inline bool isCorrectAnswer(const LessonQuiz& quiz, std::size_t option)
{
    return option == quiz.answer;
}

/// Whether any step of `lesson` acts in the Training workspace.
bool usesTraining(const Lesson& lesson);

} // namespace qkv
