// pnpm's install hook. node-llama-cpp (the CPU engine of the relay's end-to-end test) lists a prebuilt binary per
// platform as optional dependencies; pnpm installs every one whose os/cpu match, which on linux-x64 means the CUDA
// and Vulkan builds too (hundreds of MB, useless without a GPU). Keep only the plain CPU builds.
function readPackage(pkg) {
  if (pkg.name === 'node-llama-cpp' && pkg.optionalDependencies) {
    for (const name of Object.keys(pkg.optionalDependencies)) {
      if (/cuda|vulkan|metal/.test(name)) delete pkg.optionalDependencies[name];
    }
  }
  return pkg;
}

module.exports = { hooks: { readPackage } };
