# deb.cmake — Debian packages with CPack's DEB generator, one package per
# install component (docs/packaging.md):
#   pfi             (component pfi)        the CLI, libpfi.so.1, headers, pfi.pc, pfi.1,
#                                          completions, data, docs, Python hook, /etc/pfi/pfi.conf
#   pfi-agent       (component agent)      /usr/sbin/pfi-agent, its unit, /etc/default/pfi-agent
#   pfi-controller  (component controller) /usr/sbin/pfi-controller, its unit, /etc/pfi/controller.json
#   pfi-slurm       (component slurm)      the SPANK plugin and its plugstack.conf.d snippet
# `make deb` configures build-deb/ with prefix /usr, the multiarch libdir and
# PFI_DEB (man pages gzip -9n, the per-package files below) and runs cpack
# there. Each package has /usr/share/doc/PACKAGE/copyright (DEP-5:
# packaging/deb/copyright, the project's and the bundled data's licences)
# and changelog.Debian.gz (packaging/deb/changelog). Included from the
# top-level CMakeLists.txt.
if(NOT PFI_CLI)
  return() # the packages need the whole tree (daemons and report)
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME pfi)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "pfi")
# the Maintainer field: the project's own address (the one its commits
# carry; docs/packaging.md). A site that rebuilds the packages for its own
# repository puts its name here: cmake -DPFI_DEB_MAINTAINER="Ops <ops@site>"
set(PFI_DEB_MAINTAINER "pfi maintainers <maintainers@users.noreply.a-seed-53b49e0b.example>" CACHE STRING
  "the Debian packages' Maintainer field")
set(CPACK_PACKAGE_CONTACT "${PFI_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${PFI_DEB_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_OUTPUT_FILE_PREFIX ${CMAKE_BINARY_DIR}/packages)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT) # NAME_VERSION-RELEASE_ARCH.deb
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
# the runtime Depends from the binaries' shared libraries (dpkg-shlibdeps,
# Debian's dpkg-dev); libpfi.so.1 gets a shlibs file and the ldconfig trigger
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
# maintainer scripts 0755, conffiles 0644, as dpkg expects
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
# RelWithDebInfo objects, stripped in the packages
set(CPACK_STRIP_FILES TRUE)

set(PFI_DEB_DIR ${CMAKE_SOURCE_DIR}/packaging/deb)
set(CPACK_COMPONENTS_ALL pfi agent controller)

# every package's /usr/share/doc/PACKAGE: copyright and changelog.Debian.gz
# (gzip -9n: the same bytes each build); its lintian overrides, each with
# its reason (packaging/deb/PACKAGE/lintian-overrides, docs/packaging.md)
if(PFI_DEB)
  set(PFI_DEB_CHANGELOG_GZ ${CMAKE_BINARY_DIR}/deb/changelog.Debian.gz)
  add_custom_command(OUTPUT ${PFI_DEB_CHANGELOG_GZ} COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/deb
    COMMAND sh -c "gzip -9n -c '${PFI_DEB_DIR}/changelog' > '${PFI_DEB_CHANGELOG_GZ}'"
    DEPENDS ${PFI_DEB_DIR}/changelog VERBATIM)
  add_custom_target(pfi_deb_changelog ALL DEPENDS ${PFI_DEB_CHANGELOG_GZ})
  foreach(cp pfi:pfi agent:pfi-agent controller:pfi-controller slurm:pfi-slurm)
    string(REPLACE ":" ";" cp "${cp}")
    list(GET cp 0 comp)
    list(GET cp 1 pkg)
    install(FILES ${PFI_DEB_DIR}/copyright ${PFI_DEB_CHANGELOG_GZ} DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/${pkg}
      COMPONENT ${comp})
    install(FILES ${PFI_DEB_DIR}/${pkg}/lintian-overrides DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides
      RENAME ${pkg} COMPONENT ${comp})
  endforeach()
endif()

set(CPACK_DEBIAN_PFI_PACKAGE_NAME pfi)
set(CPACK_COMPONENT_PFI_DESCRIPTION
  "Power Flexibility Index of LLM training jobs: command, library, data
The pfi command (measure, predict and allocate the Power Flexibility Index
of training jobs; pfi demo, pfi event, pfi status), libpfi.so.1 with its
headers and pkg-config file, the bundled data, the documentation, shell
completions and the pfi_steplog Python hook.")
# PLplot loads its cairo driver at run time (figures): no library links it
set(CPACK_DEBIAN_PFI_PACKAGE_DEPENDS "plplot-driver-cairo")
# pfi demo starts the daemons; the step-log hook is Python
set(CPACK_DEBIAN_PFI_PACKAGE_SUGGESTS "pfi-agent, pfi-controller, python3")
set(CPACK_DEBIAN_PFI_PACKAGE_CONTROL_EXTRA ${PFI_DEB_DIR}/pfi/postinst ${PFI_DEB_DIR}/pfi/prerm ${PFI_DEB_DIR}/pfi/postrm
  ${PFI_DEB_DIR}/pfi/conffiles ${PFI_DEB_DIR}/pfi/triggers)

set(CPACK_DEBIAN_AGENT_PACKAGE_NAME pfi-agent)
set(CPACK_COMPONENT_AGENT_DESCRIPTION
  "pfi node agent: GPU power telemetry and leased power caps
pfi-agent samples a node's NVIDIA GPUs through NVML, maps them to jobs,
serves Prometheus metrics and sets GPU power caps under a lease from
pfi-controller, restoring them when the lease ends or the agent stops.
Runs as a systemd service (options in /etc/default/pfi-agent).")
# procps: /bin/kill, the units' ExecReload. (deb-systemd-helper and
# deb-systemd-invoke of the maintainer scripts are init-system-helpers',
# an Essential package: no dependency is written, as Debian policy 3.5 says)
set(CPACK_DEBIAN_AGENT_PACKAGE_DEPENDS "procps")
# NVML comes with the NVIDIA driver (Debian non-free's libnvidia-ml1, or
# NVIDIA's own installer): loaded at run time, not a hard dependency
set(CPACK_DEBIAN_AGENT_PACKAGE_SUGGESTS "libnvidia-ml1")
set(CPACK_DEBIAN_AGENT_PACKAGE_CONTROL_EXTRA
  ${PFI_DEB_DIR}/pfi-agent/postinst ${PFI_DEB_DIR}/pfi-agent/prerm ${PFI_DEB_DIR}/pfi-agent/postrm
  ${PFI_DEB_DIR}/pfi-agent/conffiles)

set(CPACK_DEBIAN_CONTROLLER_PACKAGE_NAME pfi-controller)
set(CPACK_COMPONENT_CONTROLLER_DESCRIPTION
  "pfi cluster controller: grid events to leased GPU power caps
pfi-controller receives grid events (HTTP API, OpenADR 3, a schedule),
splits each cut across the managed jobs by their Power Flexibility Index,
enforces it through the node agents with leased caps, verifies and reports
it. Configuration in /etc/pfi/controller.json (pfi-controller.json(5)).")
# the report's PNG figures: PLplot's cairo driver (loaded at run time);
# adduser: the postinst makes the system user pfi-controller runs as
set(CPACK_DEBIAN_CONTROLLER_PACKAGE_DEPENDS "adduser, procps, plplot-driver-cairo")
set(CPACK_DEBIAN_CONTROLLER_PACKAGE_CONTROL_EXTRA
  ${PFI_DEB_DIR}/pfi-controller/postinst ${PFI_DEB_DIR}/pfi-controller/prerm
  ${PFI_DEB_DIR}/pfi-controller/postrm ${PFI_DEB_DIR}/pfi-controller/conffiles)

# pfi-slurm: a SPANK plugin loads only in the Slurm it was built against
# (Slurm checks the plugin's version at load and its API may change between
# releases), so the package depends on exactly that version of
# slurm-wlm-basic-plugins: the package that ships libslurmfull.so, the
# library slurmd, srun, sbatch and salloc resolve the plugin's spank_*
# calls from; slurmd and slurm-client both depend on it at their own exact
# version. The version is libslurm-dev's (the headers built against).
if(TARGET spank_pfi)
  execute_process(COMMAND dpkg-query -W -f=\${Version} libslurm-dev
    OUTPUT_VARIABLE PFI_SLURM_VERSION RESULT_VARIABLE rc ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(rc EQUAL 0 AND PFI_SLURM_VERSION)
    list(APPEND CPACK_COMPONENTS_ALL slurm)
    set(CPACK_DEBIAN_SLURM_PACKAGE_NAME pfi-slurm)
    set(CPACK_COMPONENT_SLURM_DESCRIPTION
      "pfi Slurm SPANK plugin: --power-flex tiers and job-to-GPU files
Adds --power-flex=TIER to sbatch, srun and salloc and writes the job files
pfi-agent maps GPUs to jobs with (pfi-spank(8)). Built against Slurm
${PFI_SLURM_VERSION}; enabled by uncommenting
/etc/slurm/plugstack.conf.d/pfi.conf.")
    set(CPACK_DEBIAN_SLURM_PACKAGE_DEPENDS "slurm-wlm-basic-plugins (= ${PFI_SLURM_VERSION})")
    set(CPACK_DEBIAN_SLURM_PACKAGE_CONTROL_EXTRA ${PFI_DEB_DIR}/pfi-slurm/conffiles)
  else()
    message(STATUS "pfi-slurm not packaged: libslurm-dev is not a Debian package here (dpkg-query)")
  endif()
endif()

include(CPack)
