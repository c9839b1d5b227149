#pragma once
// A controller destroyed from inside one of its own host tasks or hooks (a task that held its last
// reference, e.g. a shared_ptr<Controller> captured by the task): its destructor cannot wait for
// the controller's work there, since that work includes the running task. The end it would have
// had, the wait for everything submitted, the dumps and the engine's release, runs on a thread of
// its own once the task has returned.
#include <memory>

namespace hetflow::detail {

class Engine;

// Takes over `engine` and ends it on another thread, as ~Controller would have. Such threads are
// joined before the process's static objects go (the library's and oneTBB's among them).
void end_controller_elsewhere(std::unique_ptr<Engine> engine);

}  // namespace hetflow::detail
