// What a family keeps between its cases (library handles, algorithm choices, NCCL teams), owned
// by the Session instead of by process-wide statics: one store per GPU, made the first time a
// case asks for it with that GPU current, and one for the whole session (resources over several
// GPUs). Destroyed with the Session, in the reverse order of creation, while the CUDA contexts
// still exist. Safe from several threads (one per GPU); an item is made once.
#pragma once
#include <functional>
#include <memory>
#include <mutex>
#include <typeindex>
#include <utility>
#include <vector>

namespace nb {

class ResourceStore {
 public:
  ResourceStore() = default;
  ResourceStore(const ResourceStore&) = delete;
  ResourceStore& operator=(const ResourceStore&) = delete;
  ~ResourceStore() { clear(); }

  // The item of type T, made by `make` on first use (T default-constructed when `make` is empty).
  template <class T>
  T& get(const std::function<std::unique_ptr<T>()>& make = {}) {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    for (auto& [type, ptr] : items_)
      if (type == std::type_index(typeid(T))) return *static_cast<T*>(ptr.get());
    std::unique_ptr<T> made = make ? make() : std::make_unique<T>();
    T& ref = *made;
    items_.emplace_back(std::type_index(typeid(T)), std::shared_ptr<void>(made.release(), [](void* p) {
                          delete static_cast<T*>(p);
                        }));
    return ref;
  }
  size_t size() const {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    return items_.size();
  }
  // Destroys every item, the last made first.
  void clear() {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    while (!items_.empty()) items_.pop_back();
  }

 private:
  mutable std::recursive_mutex mu_;  // `make` may ask the store for another item
  std::vector<std::pair<std::type_index, std::shared_ptr<void>>> items_;
};

}  // namespace nb
